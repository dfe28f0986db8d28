// tests/onnx/ort_judge.js - ONNX Runtime as the second judge of exported models (CTest onnx_ort).
//
// For each folder under the ones given (tests/onnx/ort_cases.cpp and the export tests write them): loads model.onnx in
// an InferenceSession (npm's onnxruntime-node; graph optimisations at their default, "all", as a
// deployment runs them), feeds each case_b<N>.json's inputs and compares every output with what
// dezero computed: |ort - dezero| <= 1e-4 + 1e-4 |dezero|. Prints one line per case; exit 1 on
// any difference or error.
//
//   node ort_judge.js <node_modules folder holding onnxruntime-node> <cases folder>...
'use strict';
const fs = require('fs');
const path = require('path');

const [modules, ...roots] = process.argv.slice(2);
const ort = require(path.join(modules, 'onnxruntime-node'));

function tensorOf(v) {
  const n = v.data.length;
  switch (v.dtype) {
    case 'float32': return new ort.Tensor('float32', Float32Array.from(v.data), v.dims);
    case 'float64': return new ort.Tensor('float64', Float64Array.from(v.data), v.dims);
    case 'int32': return new ort.Tensor('int32', Int32Array.from(v.data), v.dims);
    case 'int64': return new ort.Tensor('int64', BigInt64Array.from(v.data.map((x) => BigInt(x))), v.dims);
    default: throw new Error(`a ${v.dtype} input (${n} values) is not handled here`);
  }
}

async function main() {
  let failed = 0, cases = 0;
  const dirs = [];
  for (const root of roots)
    if (fs.existsSync(root)) for (const name of fs.readdirSync(root).sort()) dirs.push([name, path.join(root, name)]);
  for (const [name, dir] of dirs) {
    if (!fs.existsSync(path.join(dir, 'model.onnx'))) continue;
    const session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'));
    for (const file of fs.readdirSync(dir).filter((f) => /^case_b\d+\.json$/.test(f)).sort()) {
      const c = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
      const feeds = {};
      for (const [k, v] of Object.entries(c.inputs)) feeds[k] = tensorOf(v);
      const out = await session.run(feeds);
      let worst = 0, bad = '';
      session.outputNames.forEach((o, i) => {
        const want = c.outputs[i], got = out[o];
        if (JSON.stringify(Array.from(got.dims)) !== JSON.stringify(want.dims)) {
          bad = `output ${o}: shape [${got.dims}] where dezero has [${want.dims}]`;
          return;
        }
        got.data.forEach((g, j) => {
          const d = Math.abs(Number(g) - want.data[j]);
          worst = Math.max(worst, d);
          if (!(d <= 1e-4 + 1e-4 * Math.abs(want.data[j])) && !bad)
            bad = `output ${o}[${j}]: ONNX Runtime ${Number(g)}, dezero ${want.data[j]}`;
        });
      });
      ++cases;
      if (bad) ++failed;
      console.log(`${bad ? 'DIFFERS' : 'agrees '}  ${name} ${file.replace(/\.json$/, '')}: max |difference| ${worst.toExponential(2)}${bad ? '; ' + bad : ''}`);
    }
  }
  const version = ort.env.versions.common;
  if (failed || cases === 0) console.log(`ort_judge: ${cases - failed} of ${cases} cases agree with ONNX Runtime ${version}`);
  else console.log(`ort_judge: all ${cases} cases agree with ONNX Runtime ${version}`);
  process.exit(failed || cases === 0 ? 1 : 0);
}
main().catch((e) => {
  console.error(`ort_judge: ${e.stack || e}`);
  process.exit(1);
});
