// Every workflow the worker runs. Deterministic code only: no I/O, no Prisma, no HTTP.
export { sweepExpiredHolds } from './holdSweeper.js';
export { backgroundResponse } from './backgroundResponse.js';
export { sweepHostedFiles } from './hostedFileSweeper.js';
export { sweepStoredResponses } from './storedResponseSweeper.js';
export { sweepSignInRecords } from './signInSweeper.js';
export { videoJob } from './videoJob.js';
export { speechJob } from './speechJob.js';
export { batchJob, batchChunk } from './batch.js';
export { teamInvitation } from './teamInvitation.js';
export { sweepMemories } from './memorySweeper.js';
export { subscription } from './subscription.js';
export { cryptoDeposit } from './cryptoDeposit.js';
export { creditInvitation } from './creditInvitation.js';
