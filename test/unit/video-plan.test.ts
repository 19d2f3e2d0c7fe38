// A video request checked against its model's catalog options (activities/video/plan.ts), alone:
// what the job becomes, what it costs at most, and each refusal with the parameter it names.
import assert from 'node:assert/strict';
import type { ModelInfo, Route } from '../../activities/catalog/catalog.js';
import { RequestError } from '../../activities/core/errors.js';
import { planVideo, planVideoExtension, type VideoBody } from '../../activities/video/plan.js';

// Only the fields the planner reads; the rest of a catalog model does not matter here.
const model = (options: Record<string, unknown>) => ({ id: 'acme/video', options }) as unknown as ModelInfo;
const PER_SECOND = 50_000_000n; // 0.05 USD per second of video
const route = { price: { input: PER_SECOND, output: 0n } } as unknown as Route;

const FULL = model({
  durations: ['5', '10'],
  aspect_ratios: ['16:9', '9:16', '1:1'],
  resolutions: ['720p', '1080p'],
  params: ['negative_prompt', 'camera_fixed', 'generate_audio'],
  media: ['image'],
  max_prompt_chars: 20,
  typical_seconds: 90,
});
const plan = (body: Partial<VideoBody>, m = FULL) => planVideo(m, route, { model: m.id, ...body } as VideoBody);

function refused(body: Partial<VideoBody>, status: number, code: string, param: string, message: RegExp, m = FULL) {
  assert.throws(
    () => plan(body, m),
    (e: unknown) =>
      e instanceof RequestError &&
      e.status === status &&
      e.code === code &&
      e.opts.param === param &&
      message.test(e.message),
  );
}

const png = (bytes: number) => `data:image/png;base64,${'A'.repeat(bytes)}`;

describe('planVideo', () => {
  describe('the prompt', () => {
    it('is required', () => refused({}, 400, 'missing_required_parameter', 'prompt', /Missing required parameter/));
    it('is required when only spaces', () =>
      refused({ prompt: '   ' }, 400, 'missing_required_parameter', 'prompt', /'prompt'/));
    it('is trimmed', () => assert.equal(plan({ prompt: '  a cat  ' }).prompt, 'a cat'));
    it('is limited in characters, not bytes', () => {
      assert.equal(plan({ prompt: '🎉'.repeat(20) }).input.prompt, '🎉'.repeat(20));
      refused({ prompt: 'x'.repeat(21) }, 400, 'invalid_parameter_value', 'prompt', /21 characters.*at most 20/);
    });
    it('defaults to 2500 characters when the model names no limit', () => {
      const m = model({ durations: ['4'] });
      assert.equal(plan({ prompt: 'x'.repeat(2500) }, m).prompt?.length, 2500);
      refused({ prompt: 'x'.repeat(2501) }, 400, 'invalid_parameter_value', 'prompt', /at most 2500/, m);
    });
  });

  describe('duration', () => {
    it("defaults to the model's first duration", () => assert.equal(plan({ prompt: 'p' }).durationSeconds, 5));
    it('defaults to 5 s when the model lists none', () =>
      assert.equal(plan({ prompt: 'p' }, model({})).durationSeconds, 5));
    for (const asked of [10, '10', '10s', ' 10 S ']) {
      it(`reads ${JSON.stringify(asked)} as 10 seconds`, () =>
        assert.equal(plan({ prompt: 'p', duration: asked }).durationSeconds, 10));
    }
    it('reads `seconds` when there is no `duration`', () =>
      assert.equal(plan({ prompt: 'p', seconds: '10' }).durationSeconds, 10));
    it('ignores an empty or null duration', () => {
      assert.equal(plan({ prompt: 'p', duration: '' }).durationSeconds, 5);
      assert.equal(plan({ prompt: 'p', duration: null }).durationSeconds, 5);
    });
    it('refuses a duration the model does not list, naming the offered ones', () =>
      refused({ prompt: 'p', duration: 7 }, 400, 'invalid_parameter_value', 'duration', /Durations: "5", "10"/));
    it('names `seconds` when that was the field', () =>
      refused({ prompt: 'p', seconds: 'long' }, 400, 'invalid_parameter_value', 'seconds', /"long" is not offered/));
  });

  describe('shape', () => {
    it('takes an offered aspect ratio', () =>
      assert.equal(plan({ prompt: 'p', aspect_ratio: '1:1' }).input.aspectRatio, '1:1'));
    it('refuses another', () =>
      refused({ prompt: 'p', aspect_ratio: '4:3' }, 400, 'invalid_parameter_value', 'aspect_ratio', /16:9, 9:16/));
    it('reads an orientation as a ratio', () => {
      assert.equal(plan({ prompt: 'p', orientation: 'portrait' }).input.aspectRatio, '9:16');
      assert.equal(plan({ prompt: 'p', orientation: 'landscape' }).input.aspectRatio, '16:9');
    });
    it('prefers aspect_ratio over orientation', () =>
      assert.equal(plan({ prompt: 'p', aspect_ratio: '1:1', orientation: 'portrait' }).input.aspectRatio, '1:1'));
    it('passes no ratio to a model that offers no choice', () =>
      assert.equal(plan({ prompt: 'p', aspect_ratio: '4:3' }, model({})).input.aspectRatio, undefined));
    it('takes an offered resolution and refuses another', () => {
      assert.equal(plan({ prompt: 'p', resolution: '1080p' }).input.resolution, '1080p');
      refused({ prompt: 'p', resolution: '4k' }, 400, 'invalid_parameter_value', 'resolution', /720p, 1080p/);
    });
    it('takes a whole, non-negative seed', () => {
      assert.equal(plan({ prompt: 'p', seed: 42 }).input.seed, 42);
      assert.equal(plan({ prompt: 'p', seed: '7' }).input.seed, 7);
    });
    for (const seed of [-1, 1.5, 'abc', 2 ** 60]) {
      it(`refuses the seed ${JSON.stringify(seed)}`, () =>
        refused({ prompt: 'p', seed }, 400, 'invalid_parameter_value', 'seed', /non-negative whole/));
    }
  });

  describe('optional parameters', () => {
    it('passes the ones the model lists, read from any of their field names', () => {
      const p = plan({ prompt: 'p', negative_prompt: 'blur', cameraFixed: true, generateAudio: false });
      assert.deepEqual(p.input.params, { negative_prompt: 'blur', camera_fixed: true, generate_audio: false });
    });
    it('drops the ones it does not list', () =>
      assert.deepEqual(plan({ prompt: 'p', cfg_scale: 3, shift: 2 }).input.params, {}));
  });

  describe('media', () => {
    it('takes an image URL', () =>
      assert.equal(
        plan({ prompt: 'p', imageUrl: 'https://example.com/a.png' }).input.media.image,
        'https://example.com/a.png',
      ));
    it('takes an inline image', () =>
      assert.equal(plan({ prompt: 'p', imageDataUrl: png(10) }).input.media.image, png(10)));
    it('prefers imageUrl over the other image fields', () =>
      assert.equal(
        plan({ prompt: 'p', image: 'https://example.com/b.png', imageUrl: 'https://example.com/a.png' }).input.media
          .image,
        'https://example.com/a.png',
      ));
    it('takes a one-element list of references', () =>
      assert.equal(
        plan({ prompt: 'p', referenceImages: ['https://example.com/r.png'] }).input.media.image,
        'https://example.com/r.png',
      ));
    it('refuses a list of two', () =>
      refused(
        { prompt: 'p', referenceImages: ['https://a.example/1', 'https://a.example/2'] },
        400,
        'invalid_parameter_value',
        'referenceImages',
        /exactly one image/,
      ));
    it('refuses a kind the model does not take', () =>
      refused(
        { prompt: 'p', audioUrl: 'https://example.com/a.mp3' },
        400,
        'unsupported_input_modality',
        'audioUrl',
        /does not take audio input/,
      ));
    it('refuses a missing required kind', () =>
      refused(
        { prompt: 'p' },
        400,
        'missing_required_parameter',
        'imageUrl',
        /needs an image/,
        model({ media: ['image'], media_required: ['image'] }),
      ));
    it('refuses a library attachment', () =>
      refused(
        { prompt: 'p', imageAttachmentId: 'att_1' },
        400,
        'invalid_parameter_value',
        'imageAttachmentId',
        /media library/,
      ));
    it('refuses a data URL of another kind', () =>
      refused(
        { prompt: 'p', imageDataUrl: 'data:audio/mpeg;base64,AAAA' },
        400,
        'invalid_parameter_value',
        'imageDataUrl',
        /not a base64 data URL of an image/,
      ));
    it('refuses an inline image over 4 MB with a 413', () =>
      refused(
        { prompt: 'p', imageDataUrl: png(4 * 1024 * 1024) },
        413,
        'payload_too_large',
        'imageDataUrl',
        /limited to 4 MB/,
      ));
    it('refuses a URL that is not one', () =>
      refused({ prompt: 'p', imageUrl: 'not a url' }, 400, 'invalid_parameter_value', 'imageUrl', /not a valid URL/));
    it('refuses a URL of another scheme', () =>
      refused(
        { prompt: 'p', imageUrl: 'file:///etc/passwd' },
        400,
        'invalid_parameter_value',
        'imageUrl',
        /http\(s\) URL/,
      ));
    it('refuses a value that is not text', () =>
      refused({ prompt: 'p', imageUrl: 42 }, 400, 'invalid_parameter_value', 'imageUrl', /URL or a data URL/));
  });

  describe('price', () => {
    it('pre-charges the price per second times the duration', () => {
      const p = plan({ prompt: 'p', duration: 10 });
      assert.equal(p.perSecond, PER_SECOND);
      assert.equal(p.maxUsd, PER_SECOND * 10n);
      assert.equal(p.prechargeLabel, 'Pre-charged for 10 s');
      assert.equal(p.typicalSeconds, 90);
    });
    it('rounds a fractional duration up, and multiplies by the variants', () => {
      const m = model({ durations: ['2.5'], variants: 4 });
      const p = plan({ prompt: 'p', duration: 2.5 }, m);
      assert.equal(p.variants, 4);
      assert.equal(p.maxUsd, PER_SECOND * 3n * 4n);
      assert.equal(p.prechargeLabel, 'Pre-charged for 4 × 2.5 s');
      assert.equal(p.typicalSeconds, 180, 'the default typical time');
    });
  });

  describe('an extension', () => {
    it("continues one variant for the model's extend_seconds, priced like a new job", () => {
      const m = model({ extend_seconds: 6, variants: 4 });
      const p = planVideoExtension(m, route, { providerRequestId: 'job-1' }, 2, 'more');
      assert.deepEqual(p.input.extend, { providerRequestId: 'job-1', index: 2 });
      assert.equal(p.durationSeconds, 6);
      assert.equal(p.maxUsd, PER_SECOND * 6n * 4n);
    });
    it('defaults to 4 seconds, one variant', () => {
      const p = planVideoExtension(model({}), route, { providerRequestId: 'job-1' }, 0, null);
      assert.equal(p.maxUsd, PER_SECOND * 4n);
      assert.equal(p.prompt, null);
    });
  });
});
