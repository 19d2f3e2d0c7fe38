// What a job's workflow answered to its `ended` update (workflows/jobEnded.ts), read from its
// history: the proof that a cancel route heard the job's end from the workflow itself.
import { useTemporal } from './temporal.js';

/** The answers to `ended` updates in the workflow's history, decoded, in order. */
export async function endedAnswers(workflowId: string): Promise<unknown[]> {
  const history = await (await useTemporal()).client.workflow.getHandle(workflowId).fetchHistory();
  const ended = new Set<string>();
  const answers: unknown[] = [];
  for (const e of history.events ?? []) {
    const accepted = e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest;
    if (accepted?.input?.name === 'ended') ended.add(accepted.meta?.updateId ?? '');
    const completed = e.workflowExecutionUpdateCompletedEventAttributes;
    if (completed && ended.has(completed.meta?.updateId ?? '')) {
      const data = completed.outcome?.success?.payloads?.[0]?.data;
      answers.push(data ? JSON.parse(Buffer.from(data).toString()) : undefined);
    }
  }
  return answers;
}
