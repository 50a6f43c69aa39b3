import type { Scenario } from './support/scenario.ts'
export const freshness: Scenario = { name: 'freshness', title: 'freshness', run: async () => { throw new Error('not yet') } }
