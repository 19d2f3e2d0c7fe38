// The sign-in routes' bodies (api/routes/auth.ts) and the key-management bodies (api/routes/keys.ts).
// Unknown fields are refused, so a typo ("pasword") is a 422 naming it rather than silently ignored.
import { PASSWORD_MAX, PASSWORD_MIN } from '../../accounts/passwords.js';

const email = { type: 'string', format: 'email', maxLength: 254 } as const;
const password = { type: 'string', minLength: PASSWORD_MIN, maxLength: PASSWORD_MAX } as const;
/** display names: 1-100 characters, as the spec's team member names */
const name = { type: 'string', minLength: 1, maxLength: 100, pattern: '\\S' } as const;

export const signupSchema = {
  type: 'object',
  required: ['email', 'password', 'name'],
  additionalProperties: false,
  properties: { email, password, name },
} as const;

export const loginSchema = {
  type: 'object',
  required: ['email', 'password'],
  additionalProperties: false,
  // any length is checked (a wrong password is a wrong password), up to the cap on argon2's input
  properties: { email, password: { type: 'string', maxLength: PASSWORD_MAX } },
} as const;

export const emailCodeSchema = {
  type: 'object',
  required: ['email'],
  additionalProperties: false,
  // `name`: the display name, should this address be new and sign-up open
  properties: { email, name },
} as const;

export const emailCodeVerifySchema = {
  type: 'object',
  required: ['email', 'code'],
  additionalProperties: false,
  properties: { email, code: { type: 'string', minLength: 1, maxLength: 32 } },
} as const;

const providerList = { type: 'array', maxItems: 100, items: { type: 'string', minLength: 1, maxLength: 100 } } as const;

/** POST /api/keys: the restrictions `npm run ops -- keys create` offers, in snake_case. */
export const createKeySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: { type: 'string', maxLength: 100 },
    daily_request_limit: { type: ['integer', 'null'], minimum: 0, maximum: 2_147_483_647 },
    /** USD per UTC day, as a number or decimal text ("5", "0.25") */
    daily_usd_limit: {
      anyOf: [
        { type: 'null' },
        { type: 'number', minimum: 0, maximum: 1e9 },
        { type: 'string', pattern: '^\\d{1,9}(\\.\\d{1,9})?$' },
      ],
    },
    provider_allow: providerList,
    provider_deny: providerList,
    zdr_only: { type: 'boolean' },
    billing_mode: { enum: ['auto', 'paygo', 'subscription_only'] },
    /** PII redaction when a request does not say: the account's default, always, never */
    redaction: { enum: ['inherit', 'always', 'never'] },
    expires_at: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

/** POST /api/auth/logout takes no fields (an empty body or `{}`). */
export const logoutSchema = { type: 'object', additionalProperties: false, properties: {} } as const;
