import { createHash, timingSafeEqual } from 'node:crypto'

const digest = (value: string) => createHash('sha256').update(value).digest()

/**
 * Constant-time comparison of a presented secret with the expected one. Both sides are hashed
 * first, so neither the content nor the length of the secret leaks through timing; never throws.
 */
export function secretMatches(presented: string | undefined, expected: string): boolean {
  return secretMatcher(expected)(presented)
}

/** `secretMatches` against one expected secret, whose digest is computed once. */
export function secretMatcher(expected: string): (presented: string | undefined) => boolean {
  const expectedDigest = digest(expected)
  return (presented) => presented !== undefined && timingSafeEqual(digest(presented), expectedDigest)
}

/**
 * Which of the expected secrets (the current one first, then the previous one during a rotation) the
 * presented one is: its index, or -1. Every expected secret is compared, whichever matches.
 */
export function secretsMatcher(expected: readonly string[]): (presented: string | undefined) => number {
  const matchers = expected.map(secretMatcher)
  return (presented) => {
    const matches = matchers.map((matches) => matches(presented))
    return matches.indexOf(true)
  }
}
