// The decision questions' calibration (activities/decisions/questions.ts), alone: what the model's
// log scores become at a temperature, for a choice and for a score's criteria.
import assert from 'node:assert/strict';
import { answersOf, planQuestions } from '../../activities/decisions/questions.js';

const close = (a: number, b: number, what: string) => assert.ok(Math.abs(a - b) < 1e-9, `${what}: ${a} vs ${b}`);
const ROUTE = {
  type: 'choice',
  instructions: 'Which team handles this ticket?',
  criteria: { billing: 'Invoices and payments', technical: 'Bugs and outages', sales: null },
};
const URGENCY = { type: 'score', instructions: 'How urgent is it?', criteria: ['not', 'a little', 'rather', 'very'] };

describe('decision calibration', () => {
  it('the temperature divides the log scores before the softmax; fits are normalized', () => {
    const plans = planQuestions('s', { c: ROUTE, u: { ...URGENCY, criteria: ['a', 'b'] } }, 'A');
    const logp = [Math.log(0.5), Math.log(0.3), Math.log(0.2)];
    const a = answersOf(plans, [logp, [Math.log(0.9), Math.log(0.1)], [Math.log(0.2), Math.log(0.8)]], 2);
    const e = logp.map((x) => Math.exp(x / 2));
    const s = e.reduce((x, y) => x + y, 0);
    const c = a.c as { probabilities: Record<string, number> };
    close(c.probabilities.billing, e[0] / s, 'T=2');
    const yes = (no: number, y: number) => Math.sqrt(y) / (Math.sqrt(no) + Math.sqrt(y));
    const f0 = yes(0.9, 0.1);
    const f1 = yes(0.2, 0.8);
    const u = a.u as { probabilities: Record<string, number> };
    close(u.probabilities['1'], f1 / (f0 + f1), 'fits at T=2');
  });
});
