// The small, documented rules of the redaction layer: only what no maintained detector covers
// (@arcjet/redact finds e-mail addresses, phone numbers, card numbers and IP addresses; compromise
// finds people and dates), plus narrow supplements where the measured recall of those detectors
// fell short (README, "PII redaction": each supplement validates what it finds: Luhn for cards,
// `net.isIP` for addresses, the SSA's rules for SSNs). Every rule returns spans over the text it
// was given; detect.ts merges them with the detectors' spans.
import { isIP } from 'node:net';

export type PiiCategory = 'email' | 'phone' | 'ssn' | 'card' | 'ip' | 'address' | 'name' | 'dob';
type CredentialCategory = 'api_key' | 'token' | 'private_key' | 'password';
export type Category = PiiCategory | CredentialCategory;

export interface Span {
  start: number;
  end: number;
  category: Category;
}

export const CREDENTIALS: ReadonlySet<Category> = new Set(['api_key', 'token', 'private_key', 'password']);

/** Every match of `re` (global) as a span, with an optional capture group as the span. */
function spans(text: string, re: RegExp, category: Category, group = 0, keep?: (m: RegExpExecArray) => boolean) {
  const out: Span[] = [];
  for (const m of text.matchAll(re)) {
    if (keep && !keep(m)) continue;
    const value = m[group];
    if (!value) continue;
    const start = m.index + (group === 0 ? 0 : m[0].indexOf(value));
    out.push({ start, end: start + value.length, category });
  }
  return out;
}

const digits = (s: string) => s.replace(/\D/g, '');

// ---- credentials (never restored) ----
// Vendor key formats as secret scanners (gitleaks, GitHub secret scanning) describe them, a PEM
// private key block, a JWT, an Authorization header's token, `password=`-style pairs, and the
// password of a URL's user info.
const API_KEYS =
  /\b(?:sk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{16,}|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}|glpat-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|hf_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{36}|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,})/g;
const JWT = /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g;
const BEARER = /\b(?:Bearer|Token)\s+([A-Za-z0-9._~+/=-]{16,})/g;
const PRIVATE_KEY = /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g;
const SECRET_PAIR =
  /(?<![A-Za-z])(?:password|passwd|pwd|passcode|secret|client_secret|api[_-]?key|apikey|access[_-]?token|auth[_-]?token|refresh[_-]?token|private[_-]?key|passwort|mot de passe|contraseña)\b["']?\s*(?:[:=]|is|est|ist|es)\s*["']?([^\s"',;]{4,})/gi;
const URL_PASSWORD = /\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:([^\s@/]+)@/gi;

export function credentialSpans(text: string): Span[] {
  return [
    ...spans(text, PRIVATE_KEY, 'private_key'),
    ...spans(text, API_KEYS, 'api_key'),
    ...spans(text, JWT, 'token'),
    ...spans(text, BEARER, 'token', 1),
    ...spans(text, URL_PASSWORD, 'password', 1),
    ...spans(text, SECRET_PAIR, 'password', 1, (m) => !/^\[[A-Z_]+\]$/.test(m[1]) && !/^(?:\*+|x+)$/i.test(m[1])),
  ];
}

// ---- SSN (no detector covers it) ----
// The SSA's rules: area 001-899 but not 666, group 01-99, serial 0001-9999. Written with dashes or
// spaces it stands on its own; as nine bare digits only next to a word that names it.
function validSsn(d: string): boolean {
  const area = Number(d.slice(0, 3));
  return area > 0 && area !== 666 && area < 900 && d.slice(3, 5) !== '00' && d.slice(5) !== '0000';
}
const SSN_SEPARATED = /(?<![\d-])(\d{3})([- ])(\d{2})\2(\d{4})(?![\d-])/g;
const SSN_CUED =
  /\b(?:ssn|social security(?: number| no\.?| #)?|soc\.? sec\.?|ss#|sozialversicherungsnummer|tin|itin)\b[^0-9\n]{0,20}(\d{9}|\d{3}[- .]\d{2}[- .]\d{4})(?!\d)/gi;

export function ssnSpans(text: string): Span[] {
  return [
    ...spans(text, SSN_SEPARATED, 'ssn', 0, (m) => validSsn(digits(m[0]))),
    ...spans(text, SSN_CUED, 'ssn', 1, (m) => validSsn(digits(m[1]))),
  ];
}

// ---- supplements to @arcjet/redact, validated ----

/** The Luhn checksum every payment card number carries. */
export function luhn(d: string): boolean {
  let sum = 0;
  for (let i = 0; i < d.length; i++) {
    let n = d.charCodeAt(d.length - 1 - i) - 48;
    if (i % 2 === 1) {
      n *= 2;
      if (n > 9) n -= 9;
    }
    sum += n;
  }
  return sum % 10 === 0;
}
// issuer prefixes: Visa, Mastercard (51-55, 2221-2720), Amex, Discover, JCB, Diners, UnionPay, Maestro
const CARD_ISSUER = /^(?:4|5[1-5]|2[2-7]|3[47]|6(?:011|5|4[4-9]|2)|35|3(?:0[0-5]|[68])|5[06-9]|6[37])/;
const CARD = /(?<![\d.-])\d(?:[ -]?\d){12,18}(?![\d-]|\.\d)/g;

export function cardSpans(text: string): Span[] {
  return spans(text, CARD, 'card', 0, (m) => {
    const d = digits(m[0]);
    return d.length >= 13 && d.length <= 19 && CARD_ISSUER.test(d) && luhn(d);
  });
}

// IPv4 (with an optional port) and IPv6 candidates, kept only when `net.isIP` accepts them and
// nothing says they are a version or build number.
const IPV4 = /(?<![\w.])(\d{1,3}(?:\.\d{1,3}){3})(?![\w.]*\d)/g;
const IPV6 =
  /(?<![\w:])((?:[0-9a-f]{1,4}:){2,7}[0-9a-f]{0,4}|::(?:[0-9a-f]{1,4}:){0,6}[0-9a-f]{1,4}|(?:[0-9a-f]{1,4}:){1,6}:)(?![\w:])/gi;
const VERSION_CUE = /(?:\bv|\bversion|\bver\.?|\bbuild|\brelease|\bfirmware|\bkernel|\bsdk|\bos)\s*$/i;

export function ipSpans(text: string): Span[] {
  const notVersion = (m: RegExpExecArray) => !VERSION_CUE.test(text.slice(Math.max(0, m.index - 12), m.index));
  return [
    ...spans(text, IPV4, 'ip', 1, (m) => isIP(m[1]) === 4 && notVersion(m)),
    ...spans(text, IPV6, 'ip', 1, (m) => isIP(m[1]) === 6 && /[0-9a-f]/i.test(m[1]) && m[1].length >= 3),
  ];
}

/** Is this IPv4 literal preceded by a word saying it is a version? (arcjet's findings are checked too) */
export function looksLikeVersion(text: string, start: number): boolean {
  return VERSION_CUE.test(text.slice(Math.max(0, start - 12), start));
}

const EMAIL =
  /(?<![\w.+-])[A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,62}[A-Za-z0-9_%+-])?@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])/g;

export function emailSpans(text: string): Span[] {
  return spans(text, EMAIL, 'email');
}

// Phone numbers arcjet misses: a leading "+" and country code, the NANP's 3-3-4 shape with its
// separators, or a number of 7-15 digits right after a word that names a phone.
const PHONE_INTL = /(?<![\w+])\+\d{1,3}(?:[ .-]?\(\d{1,4}\))?(?:[ .-]?\d{1,5}){2,6}(?![\w-])/g;
const PHONE_NANP = /(?<![\w#/.-])(?:1[ .-])?\(?\d{3}\)?[ .-]\d{3}[ .-]\d{4}(?![\w/-]|\.\d)/g;
const PHONE_CUED =
  /\b(?:phone|tel|telephone|mobile|cell|fax|call(?: me)?(?: at| on)?|text(?: me)?(?: at)?|whatsapp|handy|telefon|tél|téléphone|portable|teléfono|móvil|telefono|cellulare)\b\.?(?:\s*(?:no\.?|number|nr\.?|#))?(?:\s+(?:is|ist|est|es))?\s*[:=]?\s*(\(?\+?\d[\d ()./-]{5,20}\d)/gi;

export function phoneSpans(text: string): Span[] {
  const plausible = (s: string) => {
    const n = digits(s).length;
    return n >= 7 && n <= 15;
  };
  return [
    ...spans(text, PHONE_INTL, 'phone', 0, (m) => plausible(m[0])),
    ...spans(text, PHONE_NANP, 'phone', 0, (m) => plausible(m[0]) && !notAPhone(text, m.index)),
    ...spans(text, PHONE_CUED, 'phone', 1, (m) => plausible(m[1]) && !/^\d{4}-\d{2}-\d{2}$/.test(m[1])),
  ];
}

/** Numbers that look like phone numbers but are named as something else (an order, an invoice, …). */
const ID_CUE =
  /(?:order|invoice|ticket|case|ref(?:erence)?|tracking|account|acct|id|sku|part|serial|isbn|po|no\.?|number|#)\s*[:#]?\s*$/i;
export function notAPhone(text: string, start: number): boolean {
  return ID_CUE.test(text.slice(Math.max(0, start - 16), start));
}

// ---- dates of birth: a date next to a word that says it is a birth date ----
const MONTHS =
  'jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|januar|februar|märz|mai|juni|juli|oktober|dezember|janvier|février|mars|avril|juin|juillet|août|septembre|octobre|novembre|décembre|enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|octubre|noviembre|diciembre';
const DATE_SHAPES = [
  String.raw`\d{4}[-/.]\d{1,2}[-/.]\d{1,2}`,
  String.raw`\d{1,2}[-/.]\d{1,2}[-/.](?:\d{4}|\d{2})`,
  String.raw`\d{1,2}(?:st|nd|rd|th|er|º)?\.?\s+(?:de\s+)?(?:${MONTHS})\.?,?\s+(?:de\s+)?\d{4}`,
  String.raw`(?:${MONTHS})\.?\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4}`,
  String.raw`\d{1,2}(?:st|nd|rd|th)?\s+of\s+(?:${MONTHS}),?\s+\d{4}`,
  String.raw`(?:${MONTHS})\.?\s+\d{4}`,
  String.raw`(?:19|20)\d{2}`,
];
const DATE = new RegExp(DATE_SHAPES.join('|'), 'gi');
/** The date shapes with a day, a month and a year. */
const FULL_DATE = `(?:${DATE_SHAPES.slice(0, 5).join('|')})`;
const BIRTH_CUE =
  /\b(?:d\.?o\.?b\.?|date of birth|birth ?date|birthday|born(?: on| in)?|b\.|nac[ií]\w*(?: el)?|geb(?:oren|urtsdatum)?\.?(?: am)?|né(?:e)?(?: le)?|date de naissance|fecha de nacimiento|nacid[oa](?: el)?|data di nascita|nato(?: il)?|geboortedatum)(?![\p{L}\d])/giu;

export function dobSpans(text: string): Span[] {
  const out: Span[] = [];
  for (const cue of text.matchAll(BIRTH_CUE)) {
    // the date follows the cue closely: "DOB: 03/04/1985", "born on March 3, 1985"
    const from = cue.index + cue[0].length;
    const window = text.slice(from, from + 40);
    const m = new RegExp(
      `^(?:'s)?[\\s:=,()"'-]*(?:is\\s+|was\\s+|on\\s+|the\\s+|am\\s+|le\\s+|el\\s+)*(${DATE.source})`,
      'i',
    ).exec(window);
    if (m) {
      const start = from + m[0].length - m[1].length;
      out.push({ start, end: start + m[1].length, category: 'dob' });
      continue;
    }
    // "the DOB on my policy should be July 4, 1976": a whole date (not a bare year) later in the sentence
    const sentence = /^[^.!?\n]{0,60}/.exec(text.slice(from))?.[0] ?? '';
    const later = new RegExp(FULL_DATE, 'i').exec(sentence);
    if (later) out.push({ start: from + later.index, end: from + later.index + later[0].length, category: 'dob' });
  }
  return out;
}

// ---- street addresses (no detector covers them) ----
// A house number and a street name ending in a street type ("742 Evergreen Terrace"), or a street
// word first as in most of Europe ("Hauptstraße 5", "12 rue de la Paix", "Calle Mayor 10"),
// then, when they follow, a unit, the city, a state or region and a postal code.
const STREET_TYPES =
  'street|st|broadway|avenue|ave|av|road|rd|boulevard|blvd|lane|ln|drive|dr|way|court|ct|place|pl|terrace|ter|square|sq|parkway|pkwy|highway|hwy|circle|cir|crescent|close|grove|gardens|mews|row|walk|trail|trl|alley|plaza|loop|pike|run|path';
const STREET_WORD_SUFFIX =
  '(?:straße|strasse|str\\.|weg|allee|gasse|platz|ring|damm|ufer|straat|laan|gracht|plein|vej|gatan|gata|veien)';
const CAP = "[A-ZÀ-ÖØ-Þ][\\p{L}'’-]*";
/** `word` matched whatever its case: "Street", "street", "STREET" (the rest of the pattern is case-sensitive) */
const anyCase = (words: string) =>
  words
    .split('|')
    .map((w) => [...w].map((c) => (/[a-z]/.test(c) ? `[${c}${c.toUpperCase()}]` : c)).join(''))
    .join('|');
const UNIT = String.raw`(?:,?\s*(?:${anyCase('apt|apartment|suite|ste|unit|flat|fl|floor')}|#)\.?\s*[\w-]+)?`;
// a city word is not the first half of a postcode ("London SW1A 2AA")
const CITY = String.raw`${CAP}(?![\p{L}\d])`;
const TAIL = String.raw`(?:,\s*${CITY}(?:\s${CITY}){0,2})?(?:,?\s*(?:[A-Z]{2}(?![A-Za-z0-9])|${CITY}))?(?:,?\s*(?:\d{5}(?:-\d{4})?|[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}|[A-Z]\d[A-Z]\s?\d[A-Z]\d))?`;
const ADDRESS_US = new RegExp(
  String.raw`(?:\b(?:Flat|Apt|Apartment|Unit|Suite)\s+\w+,?\s+)?\b\d{1,6}[A-Za-z]?(?:-\d+)?\s+(?:(?:[NSEW]|North|South|East|West)\.?\s+)?(?:(?:(?:${CAP}|\d{1,3}(?:st|nd|rd|th))\s+){1,4}(?:${anyCase(STREET_TYPES)})|Broadway)\b\.?(?:\s+(?:N|S|E|W|NE|NW|SE|SW)\b)?${UNIT}${TAIL}`,
  'gu',
);
const ADDRESS_EU = new RegExp(
  String.raw`(?:\b(?:(?:Am|An der|Auf der|Im|In der|Zum|Zur)\s+)?(?:${CAP})?\p{L}*${STREET_WORD_SUFFIX}|\b(?:${anyCase('rue|avenue|boulevard|bd|chemin|allée|impasse|quai|place|calle|avenida|av.|plaza|paseo|carrer|via|viale|piazza|corso|rua|travessa')})\b(?:\s+(?:de|del|de la|des|du|della|di|da|do|dos|das|la|le|les|d'))*(?:\s+${CAP}){1,3})\s+\d{1,5}[a-z]?(?:\s*[-/]\s*\d+)?(?:,?\s*(?:\d{4}-\d{3}|\d{4,5}|\d{4}\s?[A-Z]{2})\s+${CAP}(?:\s${CAP})?)?`,
  'gu',
);
const ADDRESS_FR = new RegExp(
  String.raw`\b\d{1,4}(?:\s?(?:bis|ter))?,?\s+(?:rue|avenue|boulevard|bd|chemin|allée|impasse|quai|place)\b(?:\s+(?:de|du|des|de la|d'|la|le|les))*(?:\s*${CAP}){1,4}(?:,?\s*\d{5}\s+${CAP}(?:[\s-]${CAP})?)?`,
  'gu',
);
const PO_BOX = /\b(?:P\.?\s?O\.?\s?Box|Postfach|Apartado)\s+\d+\b/gi;

// written in lower case ("i live at 12 oak st"): only after words that announce an address
const ADDRESS_CUED = new RegExp(
  String.raw`\b(?:live at|lives at|living at|address is|located at|ship to|deliver to|send it to|moved to|reside at)\s+(\d{1,6}[a-z]?\s+(?:[\p{L}'-]+\s+){1,4}(?:${STREET_TYPES})\b\.?)`,
  'giu',
);

export function addressSpans(text: string): Span[] {
  return [
    ...spans(text, ADDRESS_CUED, 'address', 1),
    ...spans(text, ADDRESS_US, 'address'),
    ...spans(text, ADDRESS_EU, 'address'),
    ...spans(text, ADDRESS_FR, 'address'),
    ...spans(text, PO_BOX, 'address'),
  ].map((s) => trimSpan(text, s));
}

/** A span without the punctuation and spaces it may have picked up at its ends. */
export function trimSpan(text: string, s: Span): Span {
  let { start, end } = s;
  while (start < end && /[\s,;:(]/.test(text[start])) start++;
  while (
    end > start &&
    /[\s,;:.)]/.test(text[end - 1]) &&
    !/\b(?:St|Ave|Rd|Dr|Blvd|Ln|Jr|Sr|str)\.$/.test(text.slice(start, end))
  )
    end--;
  return { ...s, start, end };
}

// ---- names: what compromise misses, found by the words around them ----
const NAME_WORD = "[A-ZÀ-ÖØ-Þ][a-zà-öø-ÿ'’-]+(?:-[A-ZÀ-ÖØ-Þ][a-zà-öø-ÿ'’-]+)?";
const NAME_SEQ = `${NAME_WORD}(?:\\s+(?:van|von|de|da|del|der|den|di|du|le|la|bin|ibn|al|el|[A-Z]\\.)?\\s*${NAME_WORD}){0,3}`;
const NAME_CUES = new RegExp(
  String.raw`\b(?:my name is|name's|i am|i'm|it's|it is|this is|soy|je suis|sono|name ist|heiße|call me|named|called|dear|hi|hello|hey|thanks|thank you|regards|cheers|best|sincerely|signed|from|cc|attn|attention|contact|patient|customer|client|employee|applicant|tenant|name|full name|surname|first name|last name|nombre|nom|je m'appelle|ich heiße|ich bin|mi chiamo|me llamo)\b[,:]?\s*(?:(?:mr|mrs|ms|miss|dr|prof|sir|madam|herr|frau|mme|mlle|m|sr|sra|srta|dott|dr\.med)\.?\s+)?(${NAME_SEQ})`,
  'giu',
);
const HONORIFIC = new RegExp(
  String.raw`\b(?:Mr|Mrs|Ms|Miss|Dr|Prof|Sir|Dame|Herr|Frau|Mme|Mlle|Sr|Sra|Srta|Dott|Mx)\.?\s+(${NAME_SEQ})`,
  'gu',
);

/** Capitalized words that follow a cue but are not names ("Hi team", "Thanks again"). */
const NOT_NAMES = new Set(
  `team|all|everyone|there|again|guys|folks|so|very|a|an|the|in|for|on|please|you|your|we|it|is|this|that|sir|madam|support|sales|customer|service|regards|best|thanks|hello|hi|hey|dear|from|to|and|or|but|here|good|morning|afternoon|evening|not|sure|just|also|again|ok|okay|yes|no|new|my|our|their|his|her|its|of|with|at|by|about|as|monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|june|july|august|september|october|november|december|today|tomorrow|tonight|everybody|world|name|number|address|email|phone|account|order|customer|client|patient|i|me|admin|user|manager|director|doctor|nurse|teacher|professor|ceo|cto|there's|what|how|why|when|who|which|would|could|should|can|will|do|does|did|have|has|had|looking|writing|reaching|following|trying|going|happy|glad|sorry|available|unable|able|interested|wondering|still|now|then|if|any|some|one|two|three`.split(
    '|',
  ),
);

const STRONG_CUE = /^(?:my name is|name's|je m'appelle|ich heiße|mi chiamo|me llamo)\b/i;

export function cuedNameSpans(text: string): Span[] {
  const out: Span[] = [];
  for (const re of [NAME_CUES, HONORIFIC]) {
    for (const m of text.matchAll(re)) {
      const words = m[1].split(/\s+/);
      // keep the leading words that can be a name: capitalized (the cue matched in any case, the
      // name may not) and not a word that follows such a cue without being a name
      // after "my name is" a name written in lower case is still a name
      const strong = re === NAME_CUES && STRONG_CUE.test(m[0]);
      let keep = 0;
      while (
        keep < words.length &&
        (/^\p{Lu}/u.test(words[keep]) || (strong && /^\p{Ll}{2,}$/u.test(words[keep]))) &&
        !/^\p{Lu}{2,}$/u.test(words[keep]) &&
        !(keep === 0 && words[keep].length === 1) &&
        !NOT_NAMES.has(words[keep].toLowerCase())
      )
        keep++;
      if (keep === 0) continue;
      const value = words.slice(0, keep).join(' ');
      const start = m.index + m[0].lastIndexOf(m[1]);
      const stretch = text.slice(start).indexOf(value);
      if (stretch !== 0) continue;
      out.push({ start, end: start + value.length, category: 'name' });
    }
  }
  return out;
}

// ---- structured records: the field says what the value is ----
// `"email": "…"`, `name=…`, `Phone: …` in JSON, query strings and forms, and the columns of a CSV
// or TSV whose header names them. Only values that look like their field (a name is letters) count.
const FIELDS: Array<[RegExp, Category]> = [
  [
    /^(?:full[_ ]?name|name|customer(?:[_ ]name)?|client(?:[_ ]name)?|patient(?:[_ ]name)?|first[_ ]?name|last[_ ]?name|surname|given[_ ]?name|contact(?:[_ ]name)?|user(?:[_ ]?name)?|applicant|holder|owner|recipient|nombre|nom|vorname|nachname)$/i,
    'name',
  ],
  [/^(?:e-?mail(?:[_ ]address)?|mail|correo)$/i, 'email'],
  [/^(?:phone(?:[_ ]number)?|tel(?:ephone)?|mobile|cell|fax|telefon|teléfono)$/i, 'phone'],
  [/^(?:dob|date[_ ]of[_ ]birth|birth[_ ]?date|birthday|geburtsdatum)$/i, 'dob'],
  [/^(?:ssn|social[_ ]security(?:[_ ]number)?)$/i, 'ssn'],
  [
    /^(?:address|street(?:[_ ]address)?|home[_ ]address|billing[_ ]address|shipping[_ ]address|adresse|dirección|direccion)$/i,
    'address',
  ],
];
const FIELD_SHAPE: Record<string, RegExp> = {
  name: /^\p{Lu}[\p{L}'’.-]*(?:[ -]\p{Lu}[\p{L}'’.-]*){0,3}$/u,
  email: /^[^\s@]+@[^\s@]+\.\p{L}{2,}$/u,
  phone: /^\+?[\d ()./-]{7,20}$/,
  dob: /^[\d./ -]{6,10}$|^\p{L}+\.? \d{1,2},? \d{4}$|^\d{1,2} \p{L}+ \d{4}$/u,
  ssn: /^\d{3}-?\d{2}-?\d{4}$/,
  address: /\d.*\p{L}|\p{L}.*\d/u,
};
const fieldOf = (key: string) => FIELDS.find(([re]) => re.test(key.trim()))?.[1];
const JSON_FIELD = /"([A-Za-z_ -]{2,30})"\s*:\s*"([^"\n]{1,200})"/g;
const FORM_FIELD = /(?:^|[\n|;&?]\s*)([A-Za-z][A-Za-z_ -]{1,29}?)\s*[:=]\s*(?!\s)([^\n|;&]{1,120})/g;

export function fieldSpans(text: string): Span[] {
  const out: Span[] = [];
  const add = (key: string, value: string, start: number) => {
    const category = fieldOf(key);
    const v = value.trim();
    if (!category || !v || !FIELD_SHAPE[category].test(v)) return;
    const at = start + value.indexOf(v);
    out.push({ start: at, end: at + v.length, category });
  };
  for (const m of text.matchAll(JSON_FIELD)) add(m[1], m[2], m.index + m[0].length - m[2].length - 1);
  for (const m of text.matchAll(FORM_FIELD)) add(m[1], m[2], m.index + m[0].length - m[2].length);
  out.push(...csvSpans(text));
  return out;
}

/** The cells of the columns a CSV/TSV header names (name, email, phone, …). */
function csvSpans(text: string): Span[] {
  const lines = text.split('\n');
  const sep = lines[0]?.includes('\t') ? '\t' : ',';
  const columns = (lines[0] ?? '').split(sep).map(fieldOf);
  if (lines.length < 2 || columns.length < 2 || !columns.some(Boolean)) return [];
  const out: Span[] = [];
  let offset = lines[0].length + 1;
  for (const line of lines.slice(1)) {
    let at = offset;
    line.split(sep).forEach((cell, i) => {
      const category = columns[i];
      const v = cell.trim();
      if (category && v && FIELD_SHAPE[category].test(v)) {
        const start = at + cell.indexOf(v);
        out.push({ start, end: start + v.length, category });
      }
      at += cell.length + 1;
    });
    offset += line.length + 1;
  }
  return out;
}
