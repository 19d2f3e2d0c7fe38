// PII detection (activities/redaction/detect.ts) on the labelled set (test/support/redactionSet.ts),
// alone: recall and precision in every category held to the goals README's PII redaction states.
import assert from 'node:assert/strict';
import { detect } from '../../activities/redaction/detect.js';
import type { Span } from '../../activities/redaction/rules.js';
import { GOALS, loadRedactionSet, score } from '../support/redactionSet.js';

describe('PII detection', () => {
  it('detection on the labelled set meets the goals in every category', async () => {
    const set = loadRedactionSet();
    assert.ok(set.length >= 300, `${set.length} messages`);
    const detected = new Map<string, Span[]>();
    for (const m of set) detected.set(m.id, await detect(m.text));
    const { scores } = score(set, detected);
    for (const s of scores) {
      const goal = GOALS[s.category];
      assert.ok(s.recall >= goal.recall, `${s.category} recall ${s.recall.toFixed(3)} < ${goal.recall}`);
      assert.ok(s.precision >= goal.precision, `${s.category} precision ${s.precision.toFixed(3)} < ${goal.precision}`);
    }
  });
});
