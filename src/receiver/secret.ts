import { createHash, timingSafeEqual } from 'node:crypto'

/**
 * Constant-time comparison of a presented secret with the expected one. Both sides are hashed
 * first, so neither the content nor the length of the secret leaks through timing; never throws.
 */
export function secretMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false
  const digest = (value: string) => createHash('sha256').update(value).digest()
  return timingSafeEqual(digest(presented), digest(expected))
}
