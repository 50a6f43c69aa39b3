// The simulator's table of CRM kinds: one entry per main resource the CRM serves under
// /api/<plural> (index, show, writes; webhooks when the kind names a model). The routes, the
// store's collections, the control API, the seed counts and the mirror comparison
// (mirror-truth.ts) are derived from it. A kind's key is its plural, the path of its entry in the
// resource table (src/resources); test/sandbox/kinds.test.ts proves the two agree. The plurals and the
// row each kind stores are declared below the kinds (rows.ts: `KindRows`) and type this table, so no
// kind imports it. A resource the CRM only lists (reference data) is one entry here, built by
// `plainKind` from its table entry.

import { customFieldTypes } from '../src/resources/crm.ts'
import { activityKind } from './activities.ts'
import { attachments } from './attachments.ts'
import { companies } from './companies.ts'
import { filterGroups } from './filter-groups.ts'
import type { Kind } from './kind.ts'
import { notes } from './notes.ts'
import { people } from './people.ts'
import { plainKind } from './plain-kind.ts'
import type { KindRows, Plural } from './rows.ts'
import { tasks } from './tasks.ts'
import { deals, projects } from './work.ts'

export const crmKinds: { readonly [P in Plural]: Kind<KindRows[P]> } = {
  people,
  companies,
  deals,
  projects,
  tasks,
  custom_fields_types: plainKind(customFieldTypes),
  protocols: notes,
  filter_groups: filterGroups,
  // After every kind it logs: its seed logs the creates of the records generated before it.
  activities: activityKind,
  // Last: its seed draws after every other kind's, so it changes none of theirs.
  attachments,
}

export const PLURALS = Object.keys(crmKinds) as Plural[]

export function isPlural(name: string | undefined): name is Plural {
  return name !== undefined && Object.hasOwn(crmKinds, name)
}
