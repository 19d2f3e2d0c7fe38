// fal.ai's queue API, the protocol of the video providers (queue.ts).
import type { Provider } from '../types.js';

export const falProvider: Provider = {
  protocol: 'fal',
};
