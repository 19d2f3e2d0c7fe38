// The activities the worker registers. Workflows import only the TYPE of this module, so none
// of this I/O code ever enters the deterministic workflow bundle.
export { releaseExpiredHolds } from './ledger/holds.js';
export { runBackgroundResponse, closeBackgroundResponse } from './responses/background.js';
export { deleteExpiredHostedFiles } from './media/hostedFiles.js';
export { deleteExpiredResponses } from './surfaces/responsesStore.js';
export { submitVideoJob, pollVideoJob, watchVideoJob } from './video/run.js';
export { finishVideoJob, closeVideoJob } from './video/finish.js';
export { runSpeechJob, closeSpeechJob } from './media/speechJob.js';
export { prepareBatch, runBatchRows, finishBatch } from './batches/run.js';
export { deleteStaleSignInRecords } from './accounts/signInRecords.js';
export {
  sendTeamInvitationMail,
  acceptTeamInvitation,
  revokeTeamInvitation,
  expireTeamInvitation,
} from './accounts/teamInvitations.js';
export { deleteExpiredMemories } from './memory/memory.js';
export { paySubscriptionPeriod, endSubscription, cancelSubscriptionAtPeriodEnd } from './subscriptions/periods.js';
export { observeDeposit, completeDeposit, closeDeposit } from './payments/depositRun.js';
export { closeCreditInvitation, expireCreditInvitation } from './invitations/creditInvitations.js';
