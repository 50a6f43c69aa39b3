// How often incremental sweeps verify what their newest pages cannot show: by cost against the budget.
import { describe, expect, it } from 'vitest'
import { type AnyResource, bookings, contacts, people, resources, tasks } from '../../src/resources/index.ts'
import {
  serviceVerificationCost,
  type VerificationSettings,
  verificationCost,
  verificationDue,
  verificationPeriodSeconds,
} from '../../src/sync/plan/verification.ts'

const settings: VerificationSettings = {
  intervalSeconds: 10,
  budgetShare: 0.5,
  upstreams: {
    crm: { requestsPerSecond: 5, pageSize: 250 },
    reservation: { requestsPerSecond: 2, pageSize: 100 },
  },
}

/** Live rows per resource: the named ones, 10 for every other (a list of reference data). */
const rows =
  (sizes: Record<string, number>) =>
  async (resource: AnyResource): Promise<number> =>
    sizes[resource.name] ?? 10

describe('verification', () => {
  it('costs one request where a count tells, a complete walk with its last page elsewhere', () => {
    expect(verificationCost(people, 200_000, settings)).toBe(1)
    expect(verificationCost(tasks, 2_000, settings)).toBe(9)
    expect(verificationCost(bookings, 40_000, settings)).toBe(401)
  })

  it('sums the costs of every resource of the upstream, asking only the walked ones for their rows', async () => {
    const asked: string[] = []
    const cost = await serviceVerificationCost(
      'crm',
      async (resource) => {
        asked.push(resource.name)
        return resource === tasks ? 2_000 : 10
      },
      settings,
    )
    const crm = resources.filter((resource) => resource.service === 'crm')
    const walked = crm.filter((resource) => verificationCost(resource, 1_000_000, settings) > 1)
    expect(asked.sort()).toEqual(walked.map((resource) => resource.name).sort())
    expect(asked).not.toContain('crm.people')
    // tasks 9; every other walked list of 10 rows costs 2; every counted resource 1
    expect(cost).toBe(9 + 2 * (walked.length - 1) + (crm.length - walked.length))
  })

  it('is at most every other interval', () => {
    expect(verificationPeriodSeconds('crm', 1, settings)).toBe(20)
    expect(verificationPeriodSeconds('crm', 25, settings)).toBe(20)
  })

  it('spaces complete walks so that verifying the whole upstream uses its share of the budget', async () => {
    // 40,000 bookings and 20,000 contacts: 401 + 201 requests; the small lists a few more. Half of 2
    // requests a second: about 602 s, whatever the number of small lists beside them.
    const cost = await serviceVerificationCost(
      'reservation',
      rows({ [bookings.name]: 40_000, [contacts.name]: 20_000 }),
      settings,
    )
    const lists = resources.filter((resource) => resource.service === 'reservation').length - 2
    expect(cost).toBe(401 + 201 + 2 * lists)
    expect(verificationPeriodSeconds('reservation', cost, settings)).toBe(cost / 1)
  })

  it('is due when never done, or a period after the last one', () => {
    const now = new Date('2026-11-25T12:00:00Z')
    const ago = (seconds: number) => new Date(now.getTime() - seconds * 1000)
    const cost = 100 // 40 s at half of 5 requests a second
    expect(verificationPeriodSeconds('crm', cost, settings)).toBe(40)
    expect(verificationDue(tasks, null, cost, settings, now)).toBe(true)
    expect(verificationDue(tasks, ago(30), cost, settings, now)).toBe(false)
    expect(verificationDue(tasks, ago(42), cost, settings, now)).toBe(true)
  })
})
