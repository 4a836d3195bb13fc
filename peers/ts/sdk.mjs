// Loads the pinned official TypeScript SDK (@agentclientprotocol/sdk) from the peers cache.
//
// The peers are installed by peers/install.py into $ACPIO_PEERS_CACHE/npm/node_modules (default
// <repo>/.cache/peers/npm/node_modules), which is not an ancestor of this directory, so a bare
// `import "@agentclientprotocol/sdk"` would not find it. $ACPIO_NODE_MODULES overrides the location.

import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));

/** The node_modules directory holding the pinned npm peers. */
export function nodeModules() {
  if (process.env.ACPIO_NODE_MODULES) {
    return resolve(process.env.ACPIO_NODE_MODULES);
  }
  const cache = process.env.ACPIO_PEERS_CACHE
    ? resolve(process.env.ACPIO_PEERS_CACHE)
    : join(HERE, "..", "..", ".cache", "peers");
  return join(cache, "npm", "node_modules");
}

/** Import the SDK's default (stable ACP v1) entry point. */
export async function loadSdk() {
  const root = join(nodeModules(), "@agentclientprotocol", "sdk");
  const manifestPath = join(root, "package.json");
  if (!existsSync(manifestPath)) {
    throw new Error(
      `@agentclientprotocol/sdk is not installed in ${nodeModules()}: run \`python peers/install.py\` ` +
        "(or set ACPIO_NODE_MODULES to the node_modules directory that has it)",
    );
  }
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
  const entry = manifest.exports?.["."]?.import ?? manifest.main;
  const sdk = await import(pathToFileURL(join(root, entry)).href);
  return { sdk, version: manifest.version };
}

/** Collect what the SDK reports through console.error/console.warn (invalid messages, handler errors). */
export function captureSdkComplaints(sink) {
  for (const level of ["error", "warn"]) {
    const original = console[level].bind(console);
    console[level] = (...args) => {
      sink.push(
        args
          .map((arg) => {
            if (typeof arg === "string") return arg;
            if (arg instanceof Error) return `${arg.name}: ${arg.message}`;
            try {
              return JSON.stringify(arg);
            } catch {
              return String(arg);
            }
          })
          .join(" "),
      );
      original(...args);
    };
  }
}
