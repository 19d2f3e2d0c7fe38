// The legacy talk-to-gpt endpoint as a text surface: a chat request underneath (chat's
// translation, planner and money path), answered as text/plain: the reply, then
// `<NanoGPT>{"cost",...}</NanoGPT>`. Only the reply text is shown; reasoning is billed like on chat.
import type { TextCodec } from '../../inference/codec.js';
import { talkToGptRequestSchema } from '../schemas/talkToGpt.js';
import { talkReply, talkToInternal } from '../talkToGpt.js';

export const talkToGptCodec: TextCodec<ReturnType<typeof talkToInternal>> = {
  surface: 'talk-to-gpt',
  envelope: 'legacy',
  schema: talkToGptRequestSchema,
  redaction: true,
  webSearch: true,
  translate: talkToInternal,
  answered: (r) => !!r.content,
  whole: (_run, _call, { result, bill }) => talkReply(result.content, bill),
  contentType: 'text/plain; charset=utf-8',
};
