// node-llama-cpp, loaded on first use. It is about 40 MB of an API process's memory, which a
// process that never routes a request to the built-in model should not carry. The runtime loads it
// before the first model (engine.ts); code that runs only with a loaded model reads it from here.
type LlamaLib = typeof import('node-llama-cpp');

let loading: Promise<LlamaLib> | undefined;
let loaded: LlamaLib | undefined;

export function loadLlamaLib(): Promise<LlamaLib> {
  loading ??= import('node-llama-cpp').then((lib) => {
    loaded = lib;
    return lib;
  });
  return loading;
}

/** The library, once a model has been loaded (everything that has a LocalModel in hand). */
export function llamaLib(): LlamaLib {
  if (!loaded) throw new Error('node-llama-cpp is used before any local model was loaded');
  return loaded;
}
