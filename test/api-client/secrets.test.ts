// The API keys never appear in an error or a log line, even with the CRM key in the query string and
// an upstream that echoes it back in its bodies and error messages.
import { inspect } from 'node:util'
import nock from 'nock'
import { describe, expect, it } from 'vitest'
import { UpstreamError } from '../../src/api-client/errors.ts'
import { people } from '../../src/resources/index.ts'
import {
  CRM_KEY,
  CRM_URL,
  crmClient,
  RESERVATION_KEY,
  RESERVATION_URL,
  reservationClient,
  useNock,
  useTestDatabase,
} from './harness.ts'

const forms = (key: string) => [key, encodeURIComponent(key), key.toLowerCase()]

/** Every way an error can end up in front of a person. */
function renderings(error: unknown): string[] {
  return [
    String(error),
    (error as Error).stack ?? '',
    JSON.stringify(error),
    inspect(error, { depth: null, showHidden: true }),
  ]
}

async function caught(promise: Promise<unknown>): Promise<UpstreamError> {
  const error = await promise.then(
    () => undefined,
    (error: unknown) => error,
  )
  if (!(error instanceof UpstreamError)) throw new Error(`expected an UpstreamError, got ${String(error)}`)
  return error
}

describe('secrets', () => {
  const database = useTestDatabase()
  useNock()

  it('keep the CRM key (sent as a query parameter) out of every error and log line', async () => {
    const { client, logger, lines } = crmClient(database.db, { auth: 'query', maxRetries: 1 })
    // A client of its own for the timeout, so that a slow test machine cannot time out the others.
    const hanging = crmClient(database.db, { auth: 'query', maxRetries: 1, timeoutSeconds: 0.05 })
    const echo = {
      error: 'not authorized',
      description: `key ${CRM_KEY} (${encodeURIComponent(CRM_KEY)}) unknown`,
    }
    const crm = () => nock(CRM_URL).get('/api/people/count').query({ apikey: CRM_KEY })
    crm().reply(401, echo)
    crm().reply(422, { apikey: [`${CRM_KEY} is invalid`] })
    crm().times(2).reply(500, `<html>Internal error for /api/people/count?apikey=${CRM_KEY}</html>`)
    crm()
      .times(2)
      .replyWithError(new Error(`connect ECONNREFUSED for ${CRM_URL}/api/people/count?apikey=${CRM_KEY}`))
    crm()
      .times(2)
      .reply(() => new Promise(() => {}))

    const errors = []
    for (let i = 0; i < 4; i++) errors.push(await caught(client.count(people)))
    errors.push(await caught(hanging.client.count(people)))
    expect(errors.map((e) => e.name)).toEqual([
      'UpstreamAuthError',
      'UpstreamRequestError',
      'UpstreamUnavailableError',
      'UpstreamUnavailableError',
      'UpstreamUnavailableError',
    ])
    // The bodies are kept, with the key scrubbed (not dropped).
    expect(errors[0]?.body).toEqual({
      error: 'not authorized',
      description: 'key *** (***) unknown',
    })
    expect(errors[3]?.message).toContain('***')

    for (const error of errors) logger.error({ err: error }, 'sync failed')
    const texts = [...errors.flatMap(renderings), ...lines, ...hanging.lines]
    expect(lines.length).toBeGreaterThan(10)
    for (const text of texts) {
      for (const form of forms(CRM_KEY)) expect(text).not.toContain(form)
    }
  })

  it('keep the reservation key (sent in the Authorization header) out of every error and log line', async () => {
    const { client, logger, lines } = reservationClient(database.db, { maxRetries: 0 })
    nock(RESERVATION_URL)
      .get('/api/contacts/count')
      .matchHeader('authorization', `Token token="${RESERVATION_KEY}"`)
      .reply(403, `Token token="${RESERVATION_KEY}" is not allowed`)
    const error = await caught(client.countContacts())
    expect(error.body).toBe('Token token="***" is not allowed')
    logger.error({ err: error }, 'sync failed')
    for (const text of [...renderings(error), ...lines]) {
      for (const form of forms(RESERVATION_KEY)) expect(text).not.toContain(form)
    }
  })

  it("never mask data: a key that occurs in a record's fields is kept there", async () => {
    const { client } = crmClient(database.db)
    const person = { id: 7, name: `Max ${CRM_KEY}`, updated_at: '2022-12-14T15:53:43.000+01:00' }
    nock(CRM_URL).get('/api/people/7').query(true).reply(200, { person })
    const answer = await client.show(people, 7)
    expect(answer).toMatchObject({ status: 'found', record: { name: `Max ${CRM_KEY}` } })
  })

  it("mask a hook's target (the webhook secret in its path) that an error body echoes", async () => {
    const secret = 'whsec-0123456789abcdef'
    const { client, logger, lines } = crmClient(database.db, { secrets: [secret] })
    const target = `https://sync.example.com/webhooks/crm/${secret}/person`
    nock(CRM_URL)
      .post('/api/hooks')
      .reply(422, { target_url: [`${target} is not reachable`], secret_hint: secret })
    const error = await caught(
      client.createHook({ model: 'person', event: 'update', target_url: target, object_type: 'lean' }),
    )
    logger.error({ err: error }, 'registration failed')
    for (const text of [...renderings(error), ...lines]) expect(text).not.toContain(secret)
    expect(error.message).toContain('/webhooks/crm/***')
  })
})
