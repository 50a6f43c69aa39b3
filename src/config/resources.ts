// MIRROR_RESOURCES: which resources to mirror, as qualified names (crm.people) or every resource of a
// schema (crm.*, reservations.*), comma-separated; unset, every resource of the services configured.
import { type ResourceName, resources } from '../resources/index.ts'

/** A schema's wildcard (`crm.*`) or a qualified name, and the resources it stands for. */
function resourcesNamed(item: string) {
  const wildcard = /^([a-z_]+)\.\*$/.exec(item)
  return resources.filter((resource) =>
    wildcard ? resource.name.startsWith(`${wildcard[1]}.`) : resource.name === item,
  )
}

/**
 * The resources MIRROR_RESOURCES selects, in the table's order (every resource of the services
 * configured when unset), and what is wrong with it.
 */
export function selectResources({
  MIRROR_RESOURCES,
  reservation,
}: {
  MIRROR_RESOURCES?: string | undefined
  /** Whether a reservation service is configured (of any account). */
  reservation: boolean
}) {
  const configured = resources.filter((resource) => resource.service === 'crm' || reservation)
  if (MIRROR_RESOURCES === undefined) return { names: configured.map((r) => r.name), problems: [] }
  const problems: string[] = []
  const chosen = new Set<ResourceName>()
  const items = MIRROR_RESOURCES.split(',').map((item) => item.trim())
  for (const item of items) {
    const named = resourcesNamed(item)
    if (named.length === 0) {
      problems.push(
        `MIRROR_RESOURCES names "${item.slice(0, 60)}", which is no resource: give qualified names such as crm.people, or crm.* and reservations.*, separated by commas`,
      )
    } else if (named.some((resource) => resource.service === 'reservation') && !reservation) {
      problems.push(
        `MIRROR_RESOURCES names ${item}, but no reservation service is configured (RESERVATION_BASE_URL and RESERVATION_API_KEY, or an account's reservation in ACCOUNTS_FILE)`,
      )
    }
    for (const resource of named) chosen.add(resource.name)
  }
  return { names: resources.filter((resource) => chosen.has(resource.name)).map((r) => r.name), problems }
}
