// The simulator's tables of kinds against the resource table: each kind is the resource of the same
// service and path, with its wrapper and webhook model, so that lists derived from either agree.
import { describe, expect, it } from 'vitest'
import { crmKinds } from '../../sandbox/kinds.ts'
import { simulatedResources } from '../../sandbox/mirror-truth.ts'
import { reservationKinds } from '../../sandbox/reservation-kinds.ts'
import { resources } from '../../src/resources/index.ts'

describe('the tables of kinds', () => {
  it('name CRM resources of the table, with their wrapper and webhook model', () => {
    for (const [plural, kind] of Object.entries(crmKinds)) {
      const resource = resources.find((r) => r.service === 'crm' && r.path === plural)
      expect(resource, plural).toBeDefined()
      expect(kind.plural).toBe(plural)
      // A resource wrapped under any single key ('*') is a kind that names each record's key itself.
      if (resource?.wrapper === '*') expect(kind.wrapperOf, plural).toBeDefined()
      else expect(kind.wrapper).toBe(resource?.wrapper)
      expect(kind.model).toBe(resource?.webhookModel)
    }
  })

  it('name reservation resources of the table', () => {
    for (const collection of Object.keys(reservationKinds)) {
      expect(
        resources.some((r) => r.service === 'reservation' && r.path === collection),
        collection,
      ).toBe(true)
    }
  })

  it('simulate every resource of the table but the CRM users', () => {
    const missing = resources.filter((r) => !simulatedResources.includes(r)).map((r) => r.name)
    expect(missing).toEqual(['crm.users'])
  })
})
