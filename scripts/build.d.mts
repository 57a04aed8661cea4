// Types of build.mjs for the tests that import it.
export declare const PACKAGES: string[];
/** The packages (folders of root) whose dist/ is missing or older than a source file, their package.json or build.mjs. */
export declare function stalePackages(packages?: string[], root?: string): string[];
/** Compiles the packages (folders of root) into their dist/ folders; the number of files written. Throws listing every error. */
export declare function build(packages?: string[], root?: string): number;
