// How often incremental sweeps verify what their newest pages cannot show: by cost against the budget.
import { describe, expect, it } from 'vitest'
import { bookings, people, resources, tasks, users } from '../../src/resources/index.ts'
import {
  type VerificationSettings,
  verificationDue,
  verificationPeriodSeconds,
} from '../../src/sync/sweep/verification.ts'

const crmResources = resources.filter((resource) => resource.service === 'crm').length

const settings: VerificationSettings = {
  intervalSeconds: 10,
  budgetShare: 0.5,
  upstreams: {
    crm: { requestsPerSecond: 5, pageSize: 250 },
    reservation: { requestsPerSecond: 2, pageSize: 100 },
  },
}

describe('verification', () => {
  it('is at most every other interval, for a count as for a small walk', () => {
    expect(verificationPeriodSeconds(people, 200_000, settings)).toBe(20)
    expect(verificationPeriodSeconds(users, 12, settings)).toBe(20)
    expect(verificationPeriodSeconds(tasks, 400, settings)).toBe(20)
  })

  it('spaces complete walks by their cost against the share of the budget', () => {
    // 2,000 tasks: 8 pages and the last; the CRM's resources share half of 5 requests a second.
    expect(verificationPeriodSeconds(tasks, 2_000, settings)).toBeCloseTo((9 * crmResources) / 2.5)
    // 40,000 bookings: 401 pages; 2 reservation resources share half of 2 requests a second.
    expect(verificationPeriodSeconds(bookings, 40_000, settings)).toBe(802)
  })

  it('is due when never done, or a period after the last one', () => {
    const now = new Date('2026-11-25T12:00:00Z')
    const ago = (seconds: number) => new Date(now.getTime() - seconds * 1000)
    expect(verificationDue(tasks, null, 2_000, settings, now)).toBe(true)
    expect(verificationDue(tasks, ago(10), 2_000, settings, now)).toBe(false)
    const period = verificationPeriodSeconds(tasks, 2_000, settings)
    expect(verificationDue(tasks, ago(period - 2), 2_000, settings, now)).toBe(false)
    expect(verificationDue(tasks, ago(period + 2), 2_000, settings, now)).toBe(true)
  })
})
