// The headers a delivery is kept with: credentials masked by name, the webhook secrets wherever they
// show, long values cut, and no more than 50 of them.
import { describe, expect, it } from 'vitest'
import { keptHeaders, MASKED } from '../../src/receiver/headers.ts'

describe('the headers a delivery is kept with', () => {
  it.each([
    ['authorization', 'Bearer abc', MASKED],
    ['cookie', 'session=1', MASKED],
    ['x-api-key', 'k', MASKED],
    ['x-hub-signature-256', 'sha256=00', MASKED],
    ['x-forwarded-uri', '/webhooks/crm/new-secret/person/update', `/webhooks/crm/${MASKED}/person/update`],
    ['referer', 'http://x/webhooks/crm/old-secret/', `http://x/webhooks/crm/${MASKED}/`],
    ['user-agent', 'CRM-Webhooks/1.0', 'CRM-Webhooks/1.0'],
  ])('%s: %s is kept as %s', (name, value, kept) => {
    const headers = new Headers({ [name]: value })
    expect(keptHeaders(headers, ['new-secret', 'old-secret'])).toEqual({ [name]: kept })
  })

  it('keeps 50 headers at most, each value up to 1,000 characters', () => {
    const headers = new Headers()
    for (let i = 0; i < 80; i++) headers.set(`x-h${String(i).padStart(2, '0')}`, 'v'.repeat(2_000))
    const kept = keptHeaders(headers, [''])
    expect(Object.keys(kept)).toHaveLength(50)
    expect(kept['x-h00']).toBe(`${'v'.repeat(1_000)}…`)
  })
})
