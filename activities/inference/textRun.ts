// One text request on its way through the pipeline (pipeline.ts): what the caller sent, what the
// stages have made of it so far, and the one way to plan and reserve a call for it (`prepare`).
// One object per request; the add-ons (addOns/) read and fill its fields rather than keeping
// state of their own, so the pipeline needs no closures per request.
import type { ModelInfo } from '../catalog/catalog.js';
import type { TextBody } from '../core/types.js';
import type { MeteredCall } from '../metering/meteredCall.js';
import type { ModelName } from '../routing/suffixes.js';
import type { OnlineSearch } from '../search/online.js';
import type { WebSearchSettings } from '../search/settings.js';
import type { PrepareExtra, TextCodec, TextRun as CodecRun, Translated } from './codec.js';
import type { Exchange } from './exchange.js';
import type { InferenceCall } from './execute.js';
import { type PrepareInput, prepareCall } from './prepare.js';

export type { PrepareExtra };

export class TextRun<T extends Translated = Translated> implements CodecRun<T> {
  model!: ModelInfo;
  name!: ModelName;
  input!: T;
  /** every call prepared for the answer (several for chat's `n` and the advisor) */
  readonly calls: InferenceCall[] = [];
  /** the request is masked before it leaves (PII redaction); its answer is restored */
  redaction?: PrepareInput['redaction'];
  /** PII redaction was asked for (set before masking, which comes after the reservations) */
  redact = false;
  /** web search asked for by the model name or the body */
  web?: WebSearchSettings;
  /** the model's provider searches (native web search): its fee per search */
  nativeSearchFee?: PrepareInput['searchFee'];
  /** the gateway searches before the model call (external web search) */
  search?: OnlineSearch;
  /** the external search's results, once searched (one search however many calls answer) */
  searched?: Promise<TextRun['input']['request']['messages']>;
  /** a `:memory` compression charged with the answer */
  memory?: MeteredCall;
  /** the paid preflight, run once before the first call sends (moderation) */
  preflight?: () => Promise<void>;
  /** the caller's own body no longer is what is sent: translate, never pass through */
  rewritten = false;
  /** the x402 payment this request runs on */
  paid?: string;

  constructor(
    readonly codec: TextCodec<T>,
    readonly ex: Exchange,
    public body: TextBody,
  ) {}

  /**
   * Plan and reserve one call of the answer: the caller, request id, surface, model, input and
   * billing mode filled in. A request answered by several calls prepares each with its `part`.
   */
  async prepare({ part, phase, ...extra }: PrepareExtra = {}): Promise<InferenceCall> {
    const { ex, input, search } = this;
    if (phase && (search || this.nativeSearchFee))
      throw new Error('a phase of its own is not combined with web search (refused before this)');
    const call = await prepareCall({
      caller: ex.caller,
      requestId: part ? `${ex.requestId}:${part}` : ex.requestId,
      surface: this.codec.surface,
      model: this.model,
      // with a web search: reserved with room for its results, which are searched for after
      request: search ? { ...input.request, messages: search.withRoom(input.request.messages) } : input.request,
      needs: input.needs,
      prefs: input.prefs,
      ...extra,
      // the caller's own body still holds the whole conversation, no search results, and the personal data
      native: this.rewritten || this.redaction ? undefined : extra.native,
      redaction: this.redaction,
      searchFee: this.nativeSearchFee,
      forcePaygo: extra.forcePaygo || ex.forcePaygo,
      ...phase,
    });
    this.calls.push(call);
    call.beforeSend = this.preflight;
    // one search for the request, however many calls answer it (chat's `n`), after the
    // preflight: a flagged request is not searched for
    if (search) {
      await this.preflight?.();
      this.searched ??= search.run(input.request.messages, ex.signal());
      call.ctx.request.messages = await this.searched;
    }
    return call;
  }

  /**
   * An add-on's own charge that went into the answer stands when the answer's does: a stream has
   * already delivered (and ended the response) by now; a whole answer is delivered once written out.
   */
  deliverWithAnswer(metered: MeteredCall): void {
    if (this.calls.some((c) => c.metered.isDelivered)) metered.delivered();
    else this.ex.chargeOnDelivery(metered);
  }
}
