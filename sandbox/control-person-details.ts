// The control API's part for a person's historic events and assistants (person-details.ts): the truth
// as their routes show it, and changes as a user of the upstream's UI makes them (no rate limit), silent
// like the API's unless `detailChangesTouchPerson` is set. Spread into `control.crm` (control.ts).
import { SandboxError } from './control-errors.ts'
import type { Actor } from './kind.ts'
import {
  addDetail,
  changeDetailsAtRandom,
  type DetailChange,
  type DetailOutcome,
  listDetails,
  removeDetail,
  updateDetail,
} from './person-detail-changes.ts'
import { DETAIL_WRAPPERS, type DetailList } from './person-details.ts'
import { createRandom, randomFrom } from './random.ts'
import type { SandboxState } from './state.ts'

export type { DetailChange } from './person-detail-changes.ts'
export type { DetailList } from './person-details.ts'

/** An item as its route shows it, unwrapped. */
export type DetailRecord = { id: number; [key: string]: unknown }

/** A person's items of both lists, in their order. */
export interface PersonDetails {
  historic_events: DetailRecord[]
  assis: DetailRecord[]
}

export function personDetailsControl(state: SandboxState, user: () => Actor) {
  const { crm, store } = state
  // A stream of its own, so that random changes shift no other decision of the seed.
  const own = createRandom(state.seed ^ 0xd37a115)
  const missing = (personId: number, list: DetailList, itemId?: number) =>
    new SandboxError(
      404,
      store.people.rows.has(personId) || itemId === undefined
        ? `no ${DETAIL_WRAPPERS[list]} ${itemId} of people ${personId}`
        : `no people ${personId}`,
    )
  const valid = (outcome: DetailOutcome | null, personId: number, list: DetailList, itemId?: number) => {
    if (!outcome) throw missing(personId, list, itemId)
    if (!outcome.ok)
      throw new SandboxError(
        422,
        `invalid ${DETAIL_WRAPPERS[list]}: ${JSON.stringify(outcome.errors)}`,
        outcome.errors,
      )
    return outcome.item as DetailRecord
  }

  return {
    /** A person's historic events and assistants as their routes show them, or undefined. */
    personDetails(personId: number): PersonDetails | undefined {
      const historic_events = listDetails(crm, personId, 'historic_events')
      const assis = listDetails(crm, personId, 'assis')
      if (!historic_events || !assis) return undefined
      return { historic_events, assis } as PersonDetails
    },
    /** An item added at the end of a person's list: the item. */
    addPersonDetail(personId: number, list: DetailList, fields: Record<string, unknown>): DetailRecord {
      return valid(addDetail(crm, personId, list, fields, user()), personId, list)
    },
    /** The fields given changed on a person's item. */
    updatePersonDetail(
      personId: number,
      list: DetailList,
      itemId: number,
      fields: Record<string, unknown>,
    ): void {
      valid(updateDetail(crm, personId, list, itemId, fields, user()), personId, list, itemId)
    },
    removePersonDetail(personId: number, list: DetailList, itemId: number): void {
      if (!removeDetail(crm, personId, list, itemId, user())) throw missing(personId, list, itemId)
    },
    /**
     * One change to a person's historic events or assistants, drawn from `random` (numbers in [0, 1);
     * default a stream of the sandbox's seed): an item added, changed or removed. What it did.
     */
    changePersonDetails(personId: number, random?: () => number): DetailChange {
      const source = random ? randomFrom(random) : own
      const change = changeDetailsAtRandom(crm, personId, source, user())
      if (!change) throw new SandboxError(404, `no people ${personId}`)
      return change
    },
  }
}
