// bench/ort_speed.js - the time of one inference call of an ONNX model in ONNX Runtime (npm's
// onnxruntime-node, its C library underneath), the twin of bench/onnx_speed.cpp for
// bench/compare_ort.py.
//
//   node ort_speed.js <node_modules folder> MODEL.onnx <batch> <threads> <calls> <warmup>
//
// One InferenceSession: graph optimisations "all" (ONNX Runtime's default for a deployment),
// intraOpNumThreads = <threads>, interOpNumThreads = 1, sequential execution. The input: random
// normal values of the first input's shape, symbolic axes set to <batch>. Prints
//   ort_speed: <file> batch N threads T (infer): median M ms, best B ms
'use strict';
const path = require('path');

const [modules, model, batch, threads, calls, warmup] = process.argv.slice(2);
const ort = require(path.join(modules, 'onnxruntime-node'));

function randn(n) {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i += 2) {
    const u = Math.random() || 1e-12, v = Math.random();
    const r = Math.sqrt(-2 * Math.log(u));
    a[i] = r * Math.cos(2 * Math.PI * v);
    if (i + 1 < n) a[i + 1] = r * Math.sin(2 * Math.PI * v);
  }
  return a;
}

async function main() {
  const session = await ort.InferenceSession.create(model, {
    graphOptimizationLevel: 'all',
    intraOpNumThreads: Number(threads),
    interOpNumThreads: 1,
    executionMode: 'sequential',
  });
  const name = session.inputNames[0];
  // the declared shape, from the model file's metadata when the API gives it, else the caller's
  const meta = session.inputMetadata && session.inputMetadata[0];
  let dims = meta && meta.shape ? meta.shape.map((d) => (typeof d === 'number' && d > 0 ? d : Number(batch))) : null;
  if (!dims) throw new Error('the input shape is not in the session metadata');
  const n = dims.reduce((a, b) => a * b, 1);
  const feeds = {[name]: new ort.Tensor('float32', randn(n), dims)};
  const ms = [];
  for (let i = 0; i < Number(warmup) + Number(calls); ++i) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    const t = Number(process.hrtime.bigint() - t0) / 1e6;
    if (i >= Number(warmup)) ms.push(t);
  }
  ms.sort((a, b) => a - b);
  console.log(`ort_speed: ${model} batch ${batch} threads ${threads} (infer): median ${ms[ms.length >> 1].toFixed(3)} ms, ` +
              `best ${ms[0].toFixed(3)} ms`);
}

main().catch((e) => {
  console.log(`ort_speed: ${model}: FAILED: ${e.message}`);
  process.exit(1);
});
