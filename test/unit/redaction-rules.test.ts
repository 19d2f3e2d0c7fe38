// The redaction layer's own rules (activities/redaction/rules.ts), alone: what each rule finds in a
// sentence, with the category it gives, and the look-alikes each rule's validation turns away
// (a number that fails Luhn, an SSN area the SSA never issues, a version number, an order number).
import assert from 'node:assert/strict';
import {
  addressSpans,
  cardSpans,
  credentialSpans,
  dobSpans,
  emailSpans,
  ipSpans,
  luhn,
  phoneSpans,
  type Span,
  ssnSpans,
  trimSpan,
} from '../../activities/redaction/rules.js';

/** What a rule found, as [category, text] pairs in the order of the text (two patterns finding one span: once). */
function found(rule: (text: string) => Span[], text: string): Array<[string, string]> {
  const unique = new Map(rule(text).map((s) => [`${s.start}:${s.end}:${s.category}`, s]));
  return [...unique.values()].sort((a, b) => a.start - b.start).map((s) => [s.category, text.slice(s.start, s.end)]);
}

type Case = [string, Array<[string, string]>];

function table(name: string, rule: (text: string) => Span[], cases: Case[]): void {
  describe(name, () => {
    for (const [text, want] of cases) {
      it(
        want.length
          ? `finds ${want.map(([, v]) => JSON.stringify(v)).join(', ')}`
          : `finds nothing in ${JSON.stringify(text)}`,
        () => assert.deepEqual(found(rule, text), want),
      );
    }
  });
}

describe('redaction rules', () => {
  table('credentials', credentialSpans, [
    ['use sk-proj-abcdefghijklmnop1234 please', [['api_key', 'sk-proj-abcdefghijklmnop1234']]],
    ['aws AKIAIOSFODNN7EXAMPLE here', [['api_key', 'AKIAIOSFODNN7EXAMPLE']]],
    [`token ghp_${'a'.repeat(36)} ok`, [['api_key', `ghp_${'a'.repeat(36)}`]]],
    ['stripe sk_live_abcdefghij12', [['api_key', 'sk_live_abcdefghij12']]],
    ['Authorization: Bearer abcdefghijklmnop.qrs', [['token', 'abcdefghijklmnop.qrs']]],
    [
      'jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlX2hlcmU',
      [['token', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlX2hlcmU']],
    ],
    ['password: hunter22', [['password', 'hunter22']]],
    ['mot de passe est Soleil2024', [['password', 'Soleil2024']]],
    ['postgres://admin:s3cr3t@db.example.com/app', [['password', 's3cr3t']]],
    [
      '-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----',
      [['private_key', '-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----']],
    ],
    ['password: [PASSWORD]', []],
    ['password: ********', []],
    ['password: xxxx', []],
    ['the sky is blue and the key is under the mat', []],
  ]);

  table('SSNs', ssnSpans, [
    ['my number is 123-45-6789.', [['ssn', '123-45-6789']]],
    ['spaced 123 45 6789 too', [['ssn', '123 45 6789']]],
    ['SSN: 123456789', [['ssn', '123456789']]],
    ['social security number 123.45.6789', [['ssn', '123.45.6789']]],
    ['area 666: 666-45-6789', []],
    ['area 900 and up: 912-45-6789', []],
    ['group 00: 123-00-6789', []],
    ['serial 0000: 123-45-0000', []],
    ['nine bare digits 123456789 with no cue', []],
    ['mixed separators 123-45 6789', []],
  ]);

  describe('the Luhn checksum', () => {
    for (const n of ['4111111111111111', '5500005555555559', '378282246310005', '6011111111111117'])
      it(`accepts ${n}`, () => assert.equal(luhn(n), true));
    for (const n of ['4111111111111112', '1234567812345678']) it(`refuses ${n}`, () => assert.equal(luhn(n), false));
  });

  table('cards', cardSpans, [
    ['visa 4111 1111 1111 1111 exp', [['card', '4111 1111 1111 1111']]],
    ['amex 3782-822463-10005', [['card', '3782-822463-10005']]],
    ['mc 5500005555555559', [['card', '5500005555555559']]],
    ['fails Luhn 4111 1111 1111 1112', []],
    ['no issuer 1111 1111 1111 1117', []],
    ['a decimal 4111111111111111.5', []],
  ]);

  table('IP addresses', ipSpans, [
    ['from 203.0.113.7 at noon', [['ip', '203.0.113.7']]],
    ['v6 2001:0db8:85a3:0000:0000:8a2e:0370:7334 here', [['ip', '2001:0db8:85a3:0000:0000:8a2e:0370:7334']]],
    ['out of range 256.1.1.1', []],
    ['version 1.2.3.4 shipped', []],
    ['firmware 10.0.0.12', []],
  ]);

  table('e-mail addresses', emailSpans, [
    ['write to ada.lovelace+notes@example.co.uk today', [['email', 'ada.lovelace+notes@example.co.uk']]],
    [
      'two: a@b.io, c_d@e-f.org',
      [
        ['email', 'a@b.io'],
        ['email', 'c_d@e-f.org'],
      ],
    ],
    ['no domain: ada@localhost', []],
    ['@handle on social media', []],
  ]);

  table('phone numbers', phoneSpans, [
    ['call +44 20 7946 0958 now', [['phone', '+44 20 7946 0958']]],
    ['US (415) 555-0123 ok', [['phone', '(415) 555-0123']]],
    ['dotted 415.555.0123 ok', [['phone', '415.555.0123']]],
    ['order #415-555-0123 shipped', []],
    ['invoice 415 555 0123', []],
    ['too short +1 23', []],
  ]);

  table('dates of birth', dobSpans, [
    ['DOB: 1990-04-12, blood type O', [['dob', '1990-04-12']]],
    ['born on March 3, 1985 in Ohio', [['dob', 'March 3, 1985']]],
    ['geboren am 12. Mai 1970', [['dob', '12. Mai 1970']]],
    ['my birthday was the 3rd of June, 1999', [['dob', '3rd of June, 1999']]],
    ['the meeting is on 2024-05-01', []],
  ]);

  table('postal addresses', addressSpans, [
    ['they live in 742 Evergreen Terrace, Springfield', [['address', '742 Evergreen Terrace, Springfield']]],
    [
      'office at 1600 Pennsylvania Ave NW, Washington, DC 20500.',
      [['address', '1600 Pennsylvania Ave NW, Washington, DC 20500']],
    ],
    ['Hauptstraße 5, 10115 Berlin', [['address', 'Hauptstraße 5, 10115 Berlin']]],
    ['write to P.O. Box 123', [['address', 'P.O. Box 123']]],
    ['we sold 300 units last year', []],
  ]);

  describe('trimming a span', () => {
    it('drops spaces and punctuation at both ends', () => {
      const text = ' (10 Main St, ';
      assert.deepEqual(trimSpan(text, { start: 0, end: text.length, category: 'address' }), {
        start: 2,
        end: 12,
        category: 'address',
      });
    });
    it("keeps a street type's abbreviation point", () => {
      const text = '10 Main St.';
      assert.equal(trimSpan(text, { start: 0, end: text.length, category: 'address' }).end, text.length);
    });
  });
});
