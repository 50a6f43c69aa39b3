// The headers a delivery is kept with, for the status page: what an operator needs to tell one sender,
// proxy or retry from another, and no secret. Names in lower case; the value of a header whose name
// says it carries a credential is masked, and so is the webhook secret wherever it shows (a proxy's
// `x-original-uri` repeats the path that holds it).

/** What a masked value reads. */
export const MASKED = '•••'

// authorization, cookie, x-api-key, x-hub-signature, x-auth-token, proxy-authorization, ...
const CREDENTIAL = /auth|cookie|secret|token|signature|api[-_]?key|password/i

// A sender's headers are a few hundred bytes; these bound what a hostile one can make the inbox keep.
const MOST_HEADERS = 50
const LONGEST_VALUE = 1_000

/** The headers to keep (by name, as Headers lists them); `secrets` are masked wherever they show. */
export function keptHeaders(headers: Headers, secrets: readonly string[]): Record<string, string> {
  const kept: Record<string, string> = {}
  let count = 0
  for (const [name, value] of headers) {
    if (count++ >= MOST_HEADERS) break
    if (CREDENTIAL.test(name)) {
      kept[name] = MASKED
      continue
    }
    let shown = value
    for (const secret of secrets) if (secret) shown = shown.replaceAll(secret, MASKED)
    kept[name] = shown.length > LONGEST_VALUE ? `${shown.slice(0, LONGEST_VALUE)}…` : shown
  }
  return kept
}
