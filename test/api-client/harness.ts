// What the api-client tests share: a virtual clock, a logger whose lines can be read, and clients
// wired to a test database with a budget key of their own.
import { randomUUID } from 'node:crypto'
import nock from 'nock'
import { afterAll, afterEach, beforeAll, expect } from 'vitest'
import type { Clock } from '../../src/api-client/clock.ts'
import { type CrmSettings, createCrmClient } from '../../src/api-client/crm.ts'
import { createUpstreamMetrics, type UpstreamMetrics } from '../../src/api-client/metrics.ts'
import type { ClientDeps } from '../../src/api-client/reader.ts'
import { createReservationClient, type ReservationSettings } from '../../src/api-client/reservation.ts'
import { createLogger } from '../../src/log.ts'
import type { Db } from '../../src/store/database.ts'

export { useTestDatabase } from '../support/database.ts'

export const CRM_URL = 'https://acme.crm.test'
export const CRM_KEY = 'crm-Key-7f3a9c21e5b8'
export const RESERVATION_URL = 'https://acme.reservations.test'
export const RESERVATION_KEY = 'res-Key-0d4e6b1a2c9f'
export const T0 = Date.parse('2025-03-03T09:00:00Z')

/** Time that passes only when somebody sleeps: a sleeper moves it to its wake-up time. */
export function virtualClock(start = T0): Clock & { slept: number[] } {
  let now = start
  const slept: number[] = []
  return {
    now: () => now,
    async sleepUntil(time) {
      slept.push(time - now)
      now = Math.max(now, time)
    },
    drivesBudget: true,
    slept,
  }
}

export function capturedLogger() {
  const lines: string[] = []
  const logger = createLogger({ level: 'trace', destination: { write: (line: string) => lines.push(line) } })
  return { logger, lines }
}

export interface TestDeps extends ClientDeps {
  clock: Clock & { slept: number[] }
  metrics: UpstreamMetrics
  lines: string[]
}

export function testDeps(db: Db, overrides: Partial<ClientDeps> = {}): TestDeps {
  const { logger, lines } = capturedLogger()
  return {
    db,
    logger,
    lines,
    metrics: createUpstreamMetrics(),
    clock: virtualClock(),
    random: () => 0.5,
    budgetKey: `test-${randomUUID()}`,
    ...overrides,
  } as TestDeps
}

const common = {
  requests: 1000,
  windowSeconds: 10,
  timeoutSeconds: 5,
  maxRetries: 3,
  maxPages: 100,
}

export function crmClient(db: Db, settings: Partial<CrmSettings> = {}, deps: Partial<ClientDeps> = {}) {
  const testing = testDeps(db, deps)
  const client = createCrmClient(
    { baseUrl: CRM_URL, apiKey: CRM_KEY, auth: 'header', pageSize: 500, ...common, ...settings },
    testing,
  )
  return { client, ...testing }
}

export function reservationClient(
  db: Db,
  settings: Partial<ReservationSettings> = {},
  deps: Partial<ClientDeps> = {},
) {
  const testing = testDeps(db, deps)
  const client = createReservationClient(
    {
      baseUrl: RESERVATION_URL,
      apiKey: RESERVATION_KEY,
      orderSpelling: 'underscore',
      pageSize: 100,
      ...common,
      ...settings,
    },
    testing,
  )
  return { client, ...testing }
}

/** No real network; every interceptor a test sets up must have been used. */
export function useNock() {
  beforeAll(() => nock.disableNetConnect())
  afterEach(() => {
    const pending = nock.pendingMocks()
    nock.cleanAll()
    expect(pending, 'interceptors the client never called').toEqual([])
  })
  afterAll(() => nock.enableNetConnect())
}

export const person = (id: number, updatedAt = '2022-12-14T15:53:43.000+01:00', extra = {}) => ({
  id,
  account_id: 87444,
  name: `Person ${id}`,
  created_at: '2022-11-29T13:25:56.000+01:00',
  updated_at: updatedAt,
  ...extra,
})
