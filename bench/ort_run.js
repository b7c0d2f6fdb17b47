// bench/ort_run.js — runs an ONNX model once with onnxruntime-node (its CPU execution provider) on
// .npy inputs: the other side of bench/reference_speed.py.
//
//   node bench/ort_run.js MODEL.onnx [NAME=FILE.npy ...] [--ort DIR] [-o DIR]
//
// --ort DIR: the folder that holds node_modules/onnxruntime-node (default: $MODELC_ORT_DIR, else
// build/ort beside this script's repository). Inputs not given are zeros of the model's shape (a
// benchmark run; the reference comparison gives every input). -o DIR writes each output as
// DIR/<output name>.npy (float32, float64, int64, int32, uint8, int8, bool). Prints one JSON line:
// {"load_s": session creation, "run_s": the run, "outputs": [names]}.
'use strict';

const fs = require('fs');
const path = require('path');

function usage(msg) {
  process.stderr.write('ort_run.js: ' + msg + '\nusage: node bench/ort_run.js MODEL.onnx [NAME=FILE.npy ...] [--ort DIR] [-o DIR]\n');
  process.exit(2);
}

// The numpy dtypes this script reads and writes, with onnxruntime's names for them.
const DTYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<i8': ['int64', BigInt64Array],
  '<i4': ['int32', Int32Array], '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array], '|b1': ['bool', Uint8Array],
  '<u8': ['uint64', BigUint64Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(file + ': not an .npy file');
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !shape) throw new Error(file + ': cannot read the .npy header');
  if (/'fortran_order':\s*True/.test(header)) throw new Error(file + ': Fortran order is not supported');
  const dt = DTYPES[descr[1]];
  if (!dt) throw new Error(file + ': dtype ' + descr[1] + ' is not supported');
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const body = buf.subarray(start + hlen);
  // Copy into an aligned buffer: the typed array needs its element alignment.
  const bytes = new Uint8Array(count * dt[1].BYTES_PER_ELEMENT);
  bytes.set(body.subarray(0, bytes.length));
  let data = new dt[1](bytes.buffer);
  if (dt[0] === 'bool') data = Uint8Array.from(data, (v) => (v ? 1 : 0));
  return { type: dt[0], dims, data };
}

function writeNpy(file, tensor) {
  const entry = Object.entries(DTYPES).find(([, v]) => v[0] === tensor.type);
  if (!entry) throw new Error('output of type ' + tensor.type + ' cannot be written as .npy');
  const shape = tensor.dims.length === 1 ? '(' + tensor.dims[0] + ',)' : '(' + tensor.dims.join(', ') + ')';
  let header = "{'descr': '" + entry[0] + "', 'fortran_order': False, 'shape': " + shape + ', }';
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const data = tensor.data;
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

async function main() {
  const args = process.argv.slice(2);
  let model = null;
  let ortDir = process.env.MODELC_ORT_DIR || path.join(__dirname, '..', 'build', 'ort');
  let outDir = null;
  const feeds = {};
  for (let i = 0; i < args.length; ++i) {
    const a = args[i];
    if (a === '--ort') ortDir = args[++i];
    else if (a === '-o') outDir = args[++i];
    else if (a.startsWith('-')) usage('unknown option ' + a);
    else if (model === null) model = a;
    else {
      const eq = a.lastIndexOf('=');
      if (eq <= 0) usage('input ' + a + ' is not NAME=FILE.npy');
      feeds[a.slice(0, eq)] = a.slice(eq + 1);
    }
  }
  if (!model) usage('no model given');
  const modulePath = path.join(ortDir, 'node_modules', 'onnxruntime-node');
  if (!fs.existsSync(modulePath)) {
    process.stderr.write('ort_run.js: onnxruntime-node is not installed in ' + ortDir + '\n' +
                         'install it with: npm install --ignore-scripts --prefix ' + ortDir + ' onnxruntime-node\n');
    process.exit(3);
  }
  const ort = require(modulePath);
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(model);
  const t1 = process.hrtime.bigint();
  const inputs = {};
  for (const name of session.inputNames) {
    if (feeds[name]) {
      const t = readNpy(feeds[name]);
      inputs[name] = new ort.Tensor(t.type, t.data, t.dims);
    } else {
      const meta = (session.inputMetadata || []).find((m) => m.name === name);
      const dims = meta && meta.shape ? meta.shape.map((d) => (typeof d === 'number' ? d : 1)) : null;
      if (!dims) throw new Error('input ' + name + ' has no file and no static shape');
      const count = dims.reduce((x, y) => x * y, 1);
      inputs[name] = new ort.Tensor('float32', new Float32Array(count), dims);
    }
  }
  for (const name of Object.keys(feeds)) {
    if (!session.inputNames.includes(name)) throw new Error(name + ' is not an input of the model (' + session.inputNames.join(', ') + ')');
  }
  const t2 = process.hrtime.bigint();
  const out = await session.run(inputs);
  const t3 = process.hrtime.bigint();
  if (outDir) {
    fs.mkdirSync(outDir, { recursive: true });
    for (const [name, t] of Object.entries(out)) writeNpy(path.join(outDir, name.replace(/[^A-Za-z0-9_.-]/g, '_') + '.npy'), t);
  }
  const s = (a, b) => Number(b - a) / 1e9;
  process.stdout.write(JSON.stringify({ load_s: s(t0, t1), run_s: s(t2, t3), outputs: Object.keys(out) }) + '\n');
}

main().catch((e) => {
  process.stderr.write('ort_run.js: ' + (e && e.message ? e.message : e) + '\n');
  process.exit(1);
});
