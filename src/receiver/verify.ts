// The receiver's first step: is the secret in the URL one crm-sync registered? The upstream signs
// nothing, so the secret travels as a path segment (see README). During a rotation the previous
// secret (WEBHOOK_SECRET_PREVIOUS) is accepted too, and told apart so that such deliveries are counted.
import { secretsMatcher } from './secret.ts'

export type Verification =
  | { ok: true; secret: 'current' | 'previous' }
  | { ok: false; reason: 'unauthorized' }

export type Verifier = (presented: string | undefined) => Verification

/** Compares a presented secret with the current one and the previous one, in constant time. */
export function createVerifier(secret: string, previousSecret?: string | null): Verifier {
  const whichSecret = secretsMatcher(previousSecret ? [secret, previousSecret] : [secret])
  return (presented) => {
    const matched = whichSecret(presented)
    if (matched < 0) return { ok: false, reason: 'unauthorized' }
    return { ok: true, secret: matched === 0 ? 'current' : 'previous' }
  }
}
