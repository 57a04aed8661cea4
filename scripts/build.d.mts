// Types of build.mjs for the tests that import it.
export declare const PACKAGES: string[];
/** The packages (folders of root) whose dist/ is missing or older than a source file, their package.json or build.mjs. */
export declare function stalePackages(packages?: string[], root?: string): string[];
/** Compiles the packages (folders of root) into their dist/ folders; the number of files written. Throws listing every error. */
export declare function build(packages?: string[], root?: string): number;
/** Where the agent bundle is written, relative to the repository root (dist/agent.cjs). */
export declare const AGENT_BUNDLE: string;
/** The workspace folders whose sources go into the agent bundle (the agent and its @pixelfleet dependencies). */
export declare function bundledPackages(root?: string): string[];
/** Whether root/dist/agent.cjs or its .map is missing, or the bundle is older than a bundled package's source or package.json, package-lock.json or build.mjs. */
export declare function bundleStale(root?: string): boolean;
/** Writes root/dist/agent.cjs with the agent's bundler from agent/dist; its path. */
export declare function buildAgentBundle(root?: string): Promise<string>;
