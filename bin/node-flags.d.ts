// Types of node-flags.js (plain JavaScript: the launcher runs it on any Node).
export declare const NODE_FLAGS: readonly string[]
export declare function missingNodeFlags(
  execArgv: readonly string[],
  nodeOptions: string | undefined,
): string[]
