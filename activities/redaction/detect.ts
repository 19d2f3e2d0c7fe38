// Finding personal data and credentials in a text: maintained detectors first, the documented rules
// of rules.ts where they fall short, then one set of non-overlapping spans.
//   @arcjet/redact (WebAssembly)  e-mail addresses, phone numbers, card numbers (Luhn), IP addresses
//   compromise (NLP)              people's names, and the dates of birth its date tagger finds
//   rules.ts                      SSNs, dates of birth in context, street addresses, credentials,
//                                 and validated supplements for the four arcjet categories
// Where two spans overlap the longer wins (an e-mail address over the name inside it), except that
// a credential always wins: it is never restored, so none of it may leak.
import { createHash } from 'node:crypto';
import { redact } from '@arcjet/redact';
import nlp from 'compromise';
import {
  addressSpans,
  cardSpans,
  type Category,
  CREDENTIALS,
  credentialSpans,
  cuedNameSpans,
  dobSpans,
  emailSpans,
  ipSpans,
  looksLikeVersion,
  luhn,
  notAPhone,
  phoneSpans,
  type Span,
  ssnSpans,
  fieldSpans,
  trimSpan,
} from './rules.js';

const ARCJET: Record<string, Category> = {
  email: 'email',
  'phone-number': 'phone',
  'credit-card-number': 'card',
  'ip-address': 'ip',
};

// Punctuation around a token hides it from arcjet's tokenizer ("(john@example.com)."): it sees a
// copy of the text with those characters turned into spaces, same length, so offsets still hold.
const HIDING = /[()[\]{}<>"'`,;|*]/g;

/** Every occurrence of `value` in `text` as a span (arcjet reports values, not offsets). */
function occurrences(text: string, value: string, category: Category): Span[] {
  const out: Span[] = [];
  for (let at = text.indexOf(value); at !== -1; at = text.indexOf(value, at + value.length))
    out.push({ start: at, end: at + value.length, category });
  return out;
}

async function arcjetSpans(text: string): Promise<Span[]> {
  const found: Array<[Category, string]> = [];
  const collect = (entity: string, plaintext: string) => {
    const category = ARCJET[entity];
    if (category) found.push([category, plaintext.trim()]);
    return undefined; // keep arcjet's own replacement: only what it found matters here
  };
  const normalized = text.replace(HIDING, ' ');
  await redact(text, { replace: collect });
  if (normalized !== text) await redact(normalized, { replace: collect });
  const out: Span[] = [];
  for (const [category, value] of found) {
    if (!value) continue;
    for (const s of occurrences(normalized, value, category)) {
      const span = trimSpan(text, s);
      if (accepts(text, span)) out.push(span);
    }
  }
  return out;
}

const DATE_SHAPE = /^(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4})$/;

/** The checks arcjet's findings must pass too: a card's checksum, an IP that is not a version. */
function accepts(text: string, s: Span): boolean {
  const value = text.slice(s.start, s.end);
  if (s.category === 'card') return luhn(value.replace(/\D/g, ''));
  if (s.category === 'ip') return !looksLikeVersion(text, s.start);
  if (s.category === 'phone')
    return value.replace(/\D/g, '').length >= 7 && !notAPhone(text, s.start) && !DATE_SHAPE.test(value);
  // a host name, not "root@203.0.113.45"
  if (s.category === 'email') return /\.\p{L}{2,}$/u.test(value);
  return true;
}

// ---- names with compromise ----
interface Term {
  text: string;
  post: string;
  tags: string[];
  offset: { start: number; length: number };
}

/** Words that compromise tags as a person's but that are the words around one. */
const NOT_A_NAME = /^(?:here|there|me|you|him|her|them|us|i|it|mom|dad|mum|sir|madam|guys|everyone|team)$/i;

function personSpans(text: string): Span[] {
  const doc = nlp(text);
  const out: Span[] = [];
  const sentences = doc.json({ offset: true }) as Array<{ terms: Term[] }>;
  for (const sentence of sentences) {
    const terms = sentence.terms;
    // written without capitals (a chat message): names may be too
    const informal = !terms.some((t, k) => k > 0 && /^\p{Lu}/u.test(t.text) && t.text !== 'I');
    let i = 0;
    while (i < terms.length) {
      // "the grant", "my will": after a determiner a lower-case word is not a name
      const afterDeterminer = i > 0 && terms[i - 1].tags.some((t) => t === 'Determiner' || t === 'Possessive');
      const lower = !/^\p{Lu}/u.test(terms[i].text);
      if ((!isPersonWord(terms[i], informal) || (lower && afterDeterminer)) && !startsUnknownName(terms, i)) {
        i++;
        continue;
      }
      let j = i;
      // a name goes on over the capitalized words compromise does not know ("Oluwaseun Adeyemi")
      while (
        j + 1 < terms.length &&
        !/[,.;:!?()]/.test(terms[j].post) &&
        (isPersonWord(terms[j + 1], informal) || isSurnameLike(terms[j + 1]))
      )
        j++;
      // "Anna van der Berg", "Ludwig van Beethoven": particles, then the surname
      let k = j + 1;
      while (k < terms.length && PARTICLE.test(terms[k].text) && !/[,.;:!?()]/.test(terms[k - 1].post)) k++;
      if (k > j + 1 && k < terms.length && /^\p{Lu}\p{Ll}+/u.test(terms[k].text)) j = k;
      const start = terms[i].offset.start;
      const last = terms[j];
      // compromise keeps "Haddad,liam@x.com" (a CSV row) as one term: the name ends with its letters
      const end = last.offset.start + (/^[\p{L}'’.-]+/u.exec(last.text)?.[0].length ?? last.offset.length);
      out.push(trimSpan(text, { start, end, category: 'name' }));
      i = j + 1;
    }
  }
  return out;
}

function isPersonWord(t: Term, informal: boolean): boolean {
  if (!t.tags.includes('Person') || t.tags.includes('Honorific') || NOT_A_NAME.test(t.text)) return false;
  // not a letter, an honorific without its tag ("Mr"), an acronym ("DOB", "JFK")
  if (!/^\p{L}/u.test(t.text) || HONORIFIC_WORD.test(t.text) || /^\p{Lu}{2,}$/u.test(t.text)) return false;
  // a lower-case word is a name only in lower-case writing, where compromise knows it as a first
  // name ("talk to jennifer"); in ordinary prose a lower-case "grant" is a word
  return /^\p{Lu}/u.test(t.text) || (informal && t.tags.includes('FirstName'));
}
const PARTICLE = /^(?:van|von|der|den|de|del|della|di|da|du|dos|das|le|la|bin|ibn|al|el|ter|ten)$/;
const HONORIFIC_WORD = /^(?:mr|mrs|ms|mx|dr|prof|sir|miss|madam|herr|frau|mme|mlle|sr|sra)$/i;

/**
 * Two capitalized words compromise knows nothing about ("Chidi Okonkwo", "Anjali Menon"): its
 * lexicon holds mostly Western given names. Title Case is also how products and concepts are
 * written ("Null Pointer Exception", "Admin Dashboard"), so the pair must stand where people stand:
 * after a word that introduces a person ("colleague", "ask", "Dear") or before one that follows a
 * person ("said", "is", "and"), and neither word may be one compromise knows ("Deep", "Learning").
 */
function startsUnknownName(terms: Term[], i: number): boolean {
  const a = terms[i];
  const b = terms[i + 1];
  if (!b || /[,.;:!?()]/.test(a.post)) return false;
  const plain = (t: Term) =>
    /^\p{Lu}\p{Ll}+$/u.test(t.text) && t.tags.every((tag) => UNKNOWN.has(tag)) && !(t.text.toLowerCase() in lexicon());
  if (!plain(a) || !plain(b) || b.tags.includes('Singular') || COMMON_SECOND.test(b.text)) return false;
  const before = terms[i - 1]?.text.toLowerCase();
  const after = /[.;:!?()]/.test(b.post) ? undefined : terms[i + 2]?.text.toLowerCase();
  return (before !== undefined && PERSON_BEFORE.has(before)) || (after !== undefined && PERSON_AFTER.has(after));
}
const PERSON_BEFORE = new Set(
  `colleague|coworker|friend|manager|boss|wife|husband|partner|son|daughter|brother|sister|mother|father|mom|mum|dad|uncle|aunt|cousin|grandma|grandpa|neighbor|neighbour|client|customer|patient|tenant|holder|landlord|doctor|nurse|teacher|student|employee|candidate|applicant|ask|tell|told|asked|met|meet|email|emailed|ping|cc|thank|thanks|dear|hi|hello|hey|by|mr|mrs|ms|dr|prof|named|called|contact|attn|signed|regards|from`.split(
    '|',
  ),
);
const PERSON_AFTER = new Set(
  `said|says|is|was|will|would|has|had|joined|called|wrote|asked|told|reported|and|who|agreed|approved|signed|lives|lived|works|worked|thinks|wants|needs`.split(
    '|',
  ),
);
// biome-ignore lint/suspicious/noExplicitAny: compromise's model is untyped
const lexicon = (): Record<string, unknown> => (nlp as any).world().model.one.lexicon;
const UNKNOWN = new Set(['Noun', 'ProperNoun', 'Singular']);
/** second words of places and things that compromise does not tag */
const COMMON_SECOND =
  /^(?:North|South|East|West|Northwest|Northeast|Southwest|Southeast|Sea|Ocean|Lake|River|Bay|Island|Islands|Valley|Mountains?|Park|Center|Centre|Hall|Bridge|Square|Station|Airport|Hotel|Museum|University|College|School|Church|Cathedral|Castle|Tower|Street|Road|Avenue|Inc|Ltd|Corp|Group|Labs?|Team|Studio|Games|Cup|League|Award|Prize)$/;

/** A capitalized word after a name that compromise does not know as anything else: a surname. */
function isSurnameLike(t: Term): boolean {
  return (
    /^\p{Lu}\p{Ll}+/u.test(t.text) &&
    !t.tags.some((tag) =>
      ['Place', 'Organization', 'Date', 'Month', 'WeekDay', 'Pronoun', 'Verb', 'Value', 'Acronym'].includes(tag),
    )
  );
}

/**
 * Capitalized words right after a name ("Li Wei and Oluwaseun Adeyemi"): names often come in
 * lists, and compromise knows the first but not the second.
 */
function coordinatedNames(text: string, names: Span[]): Span[] {
  const out: Span[] = [];
  const next = /^(?:,\s*|\s+(?:and|or|&|und|et|y|e)\s+)(\p{Lu}\p{Ll}+(?:[ -]\p{Lu}\p{Ll}+){1,2})\b/u;
  for (const n of names) {
    const m = next.exec(text.slice(n.end));
    if (!m) continue;
    const start = n.end + m[0].length - m[1].length;
    out.push({ start, end: start + m[1].length, category: 'name' });
  }
  return out;
}

/** Dates compromise finds right after a birth cue that the rules' date shapes do not cover. */
function taggedBirthDates(text: string): Span[] {
  const out: Span[] = [];
  const cue = /\b(?:d\.?o\.?b\.?|date of birth|birth ?date|birthday|born(?: on)?)\b[\s:]*/gi;
  for (const m of text.matchAll(cue)) {
    const from = m.index + m[0].length;
    const doc = nlp(text.slice(from, from + 40)).match('^#Date+');
    const hit = (doc.json({ offset: true }) as Array<{ text: string; offset: { start: number; length: number } }>)[0];
    if (!hit || !/\d/.test(hit.text)) continue;
    out.push(
      trimSpan(text, {
        start: from + hit.offset.start,
        end: from + hit.offset.start + hit.offset.length,
        category: 'dob',
      }),
    );
  }
  return out;
}

/** Which category a span of the same length as another is taken to be. */
const RANK: Category[] = ['card', 'ssn', 'email', 'ip', 'dob', 'phone', 'address', 'name'];

/** Overlaps resolved: credentials first, then longer spans before shorter ones. */
function resolve(all: Span[]): Span[] {
  const ranked = all
    .filter((s) => s.end > s.start)
    .sort(
      (a, b) =>
        Number(CREDENTIALS.has(b.category)) - Number(CREDENTIALS.has(a.category)) ||
        b.end - b.start - (a.end - a.start) ||
        RANK.indexOf(a.category) - RANK.indexOf(b.category) ||
        a.start - b.start,
    );
  const kept: Span[] = [];
  for (const s of ranked) if (!kept.some((k) => k.start < s.end && s.start < k.end)) kept.push(s);
  return kept.sort((a, b) => a.start - b.start);
}

/** Every piece of personal data and every credential in `text`, as non-overlapping spans in order. */
export async function detect(text: string): Promise<Span[]> {
  if (!/[\p{L}\p{N}]/u.test(text)) return [];
  // A conversation is sent again, whole, with every turn: what was found in a message before is
  // remembered (by the text's hash; the spans hold offsets, not the data) for the next request.
  const key = createHash('sha256').update(text).digest('base64');
  const known = seen.get(key);
  if (known) {
    seen.delete(key);
    seen.set(key, known);
    return known;
  }
  const spans = await find(text);
  if (seen.size >= SEEN_MAX) seen.delete(seen.keys().next().value as string);
  seen.set(key, spans);
  return spans;
}

const seen = new Map<string, Span[]>();
const SEEN_MAX = 5_000;

async function find(text: string): Promise<Span[]> {
  const fields = fieldSpans(text);
  const people = [...personSpans(text), ...cuedNameSpans(text), ...fields.filter((f) => f.category === 'name')];
  return resolve([
    ...credentialSpans(text),
    ...(await arcjetSpans(text)),
    ...emailSpans(text),
    ...phoneSpans(text),
    ...cardSpans(text),
    ...ipSpans(text),
    ...ssnSpans(text),
    ...dobSpans(text),
    ...taggedBirthDates(text),
    ...addressSpans(text),
    ...fields.filter((f) => f.category !== 'name'),
    ...people,
    ...coordinatedNames(text, people),
  ]);
}
