// The clients built from the configuration: defaults of the new variables, and what they turn into.
import nock from 'nock'
import { describe, expect, it } from 'vitest'
import { createUpstreamClients } from '../../src/api-client/index.ts'
import { ConfigError, parseConfig } from '../../src/config/index.ts'
import { contacts, people } from '../../src/resources/index.ts'
import {
  CRM_KEY,
  CRM_URL,
  RESERVATION_KEY,
  RESERVATION_URL,
  testDeps,
  useNock,
  useTestDatabase,
} from './harness.ts'

const env = { CRM_BASE_URL: CRM_URL, CRM_API_KEY: CRM_KEY }

describe('upstream configuration', () => {
  const database = useTestDatabase()
  useNock()

  it('defaults to 50 requests per 10 s for both services, and pages of 500 and 250', () => {
    expect(parseConfig(env).upstream).toEqual({
      timeoutSeconds: 30,
      maxRetries: 4,
      maxPages: 10_000,
      crm: { auth: 'header', requests: 50, windowSeconds: 10, pageSize: 500 },
      reservation: { requests: 50, windowSeconds: 10, pageSize: 250 },
    })
  })

  it('names every invalid upstream variable', () => {
    try {
      parseConfig({ ...env, CRM_AUTH: 'cookie', CRM_RATE_LIMIT: '0' })
      expect.unreachable()
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error
      expect(error.problems.map((problem) => problem.split(' ')[0])).toEqual(['CRM_AUTH', 'CRM_RATE_LIMIT'])
    }
  })

  it('builds both clients from the configuration, and no reservation client without its variables', async () => {
    const config = parseConfig({
      ...env,
      CRM_AUTH: 'query',
      RESERVATION_BASE_URL: RESERVATION_URL,
      RESERVATION_API_KEY: RESERVATION_KEY,
    })
    const clients = createUpstreamClients(config, testDeps(database.db))
    nock(CRM_URL)
      .get('/api/people')
      .query({ apikey: CRM_KEY, perpage: '500', page: '1', includes: /tags/ })
      .reply(200, [])
    nock(RESERVATION_URL)
      .get('/api/contacts')
      .matchHeader('authorization', `Token token="${RESERVATION_KEY}"`)
      .query({ perpage: '250', page: '1', order: 'updated_at-asc', include_tags: 'true' })
      .reply(200, [])
    await clients.crm.index(people)
    await clients.reservation?.index(contacts, { order: { field: 'updated_at', direction: 'asc' } })

    expect(createUpstreamClients(parseConfig(env), testDeps(database.db)).reservation).toBeNull()
  })
})
