// JSON schemas of the build & project API, for OpenAPI and for response serialization (only
// the listed fields are ever written: no key hashes or internal columns can leak).
export const errorBody = {
  type: 'object',
  description: 'Every error: `{ message }`.',
  properties: { message: { type: 'string' } },
  required: ['message'],
} as const;

/** Error responses every route documents. */
export const errorResponses = { '4xx': errorBody, '5xx': errorBody } as const;

export const queryAuth = {
  type: 'object',
  properties: {
    userId: { type: 'string', description: 'The user id.' },
    apikey: { type: 'string', description: 'The API key (all-lowercase parameter name).' },
  },
  required: ['userId', 'apikey'],
} as const;

export const projectIdParams = {
  type: 'object',
  properties: { projectId: { type: 'string' } },
  required: ['projectId'],
} as const;

const bodyAuthProperties = {
  apiKey: { type: 'string', description: 'The API key. Never in an Authorization header.' },
  userId: { type: 'string', description: 'The user id; must be the key owner.' },
} as const;

/** A POST body: the credentials, `projectId`, and the route's own fields. */
export function postBody(extra: Record<string, object>, extraRequired: string[]) {
  return {
    type: 'object',
    properties: { ...bodyAuthProperties, projectId: { type: 'string' }, ...extra },
    required: ['apiKey', 'userId', 'projectId', ...extraRequired],
  } as const;
}

export const settingsBody = (settingsProperties: Record<string, object>) =>
  ({
    type: 'object',
    properties: { ...bodyAuthProperties, ...settingsProperties },
    required: ['apiKey', 'userId'],
    additionalProperties: false,
  }) as const;

export const build = {
  type: 'object',
  properties: {
    uploadId: { type: 'string' },
    fileUrl: { type: ['string', 'null'] },
    status: { type: 'string' },
    objection: { type: ['string', 'null'] },
    autoRelease: { type: 'boolean' },
    live: { type: 'boolean' },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
  required: ['uploadId', 'fileUrl', 'status', 'objection', 'autoRelease', 'live', 'createdAt', 'updatedAt'],
} as const;

export const buildStatusResult = {
  type: 'object',
  properties: { uploadId: { type: 'string' }, status: { type: 'string' } },
  required: ['uploadId', 'status'],
} as const;
