// The teams API's bodies and queries (api/routes/teams.ts), after the spec's Teams table. Unknown
// fields are refused (a typo is a 422 naming it), like the session routes' schemas.
const teamName = {
  type: 'string',
  minLength: 2,
  maxLength: 50,
  // letters, numbers, spaces, hyphens, underscores; not only spaces
  pattern: '^(?=.*[\\p{L}\\p{N}_-])[\\p{L}\\p{N} _-]+$',
} as const;
const sessionId = { type: 'integer', minimum: 1, maximum: 2_147_483_647 } as const;
/** USD a month, or null for none */
const usdOrNull = { type: ['number', 'null'], minimum: 0, maximum: 1e9 } as const;
const token = { type: 'string', minLength: 16, maxLength: 200 } as const;
const email = { type: 'string', format: 'email', maxLength: 254 } as const;

export const createTeamSchema = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: { name: teamName },
} as const;

export const patchTeamSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: { name: teamName, status: { enum: ['active', 'paused', 'suspended'] } },
} as const;

export const deleteTeamSchema = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: { name: { type: 'string', maxLength: 200 } },
} as const;

export const membersQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    page: { type: 'integer', minimum: 1, maximum: 1_000_000, default: 1 },
    limit: { type: 'integer', minimum: 1, maximum: 100 },
  },
} as const;

/** A role change (`role`) and/or a limit change (`usage_limit_usd`, `usage_limit_enforced`). */
export const patchMemberSchema = {
  type: 'object',
  required: ['sessionId'],
  additionalProperties: false,
  minProperties: 2,
  properties: {
    sessionId,
    role: { enum: ['admin', 'member'] },
    usage_limit_usd: usdOrNull,
    usage_limit_enforced: { type: 'boolean' },
  },
} as const;

export const memberRefSchema = {
  type: 'object',
  required: ['sessionId'],
  additionalProperties: false,
  properties: { sessionId },
} as const;

export const patchSelfSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    bill_to_team: { type: 'boolean' },
    name: { type: 'string', minLength: 1, maxLength: 100, pattern: '\\S' },
  },
} as const;

export const emptySchema = { type: 'object', additionalProperties: false, properties: {} } as const;

export const createInvitationSchema = {
  type: 'object',
  required: ['email'],
  additionalProperties: false,
  properties: { email, role: { enum: ['admin', 'member'] } },
} as const;

export const patchInvitationSchema = {
  type: 'object',
  required: ['action'],
  additionalProperties: false,
  properties: { action: { enum: ['revoke'] }, id: { type: 'string', minLength: 1, maxLength: 100 }, token },
  anyOf: [{ required: ['id'] }, { required: ['token'] }],
} as const;

export const tokenSchema = {
  type: 'object',
  required: ['token'],
  additionalProperties: false,
  properties: { token },
} as const;

export const lookupQuerySchema = {
  type: 'object',
  required: ['token'],
  properties: { token },
} as const;

export const inviteLinkSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { action: { enum: ['enable', 'disable'] } },
} as const;

export const inviteLinkEmailSchema = {
  type: 'object',
  required: ['emails'],
  additionalProperties: false,
  properties: { emails: { type: 'array', minItems: 1, maxItems: 10, uniqueItems: true, items: email } },
} as const;

export const patchJoinRequestSchema = {
  type: 'object',
  required: ['id'],
  additionalProperties: false,
  properties: { action: { enum: ['accept', 'reject'] }, id: { type: 'string', format: 'uuid' } },
} as const;

export const joinRequestRefSchema = {
  type: 'object',
  required: ['id'],
  additionalProperties: false,
  properties: { id: { type: 'string', format: 'uuid' } },
} as const;

/** "2026-11-01" or a full ISO timestamp */
const isoDate = { type: 'string', anyOf: [{ format: 'date' }, { format: 'date-time' }] } as const;

export const usageQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: { from: isoDate, to: isoDate },
} as const;

export const settingsSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    default_member_usage_limit_usd: usdOrNull,
    team_usage_limit_usd: usdOrNull,
    usage_limit_enforced: { type: 'boolean' },
  },
} as const;

export const allowedModelsSchema = {
  type: 'object',
  required: ['allowed_models'],
  additionalProperties: false,
  properties: {
    allowed_models: {
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          maxProperties: 1000,
          propertyNames: { minLength: 1, maxLength: 200 },
          additionalProperties: { type: 'boolean' },
        },
      ],
    },
  },
} as const;
