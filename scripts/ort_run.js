#!/usr/bin/env node
// scripts/ort_run.js — runs an ONNX model with onnxruntime (onnxruntime-node's CPU library) on .npy
// inputs and writes its outputs as .npy files: how `modelc verify --ort` and the e2e tests
// (tests/e2e/check_models.py) check the reference interpreter against the engine users trust.
//
//   node scripts/ort_run.js --ort PKG --model M.onnx --out DIR [--input NAME=FILE.npy]...
//   node scripts/ort_run.js --bench --ort PKG --model M.onnx [--out DIR] [--input NAME=FILE.npy]...
//
// PKG is the onnxruntime-node package folder (build/ort/node_modules/onnxruntime-node, which
// `scripts/setup.sh --tests` installs), or a folder holding node_modules/onnxruntime-node. Each
// output i is written to DIR/i.npy (C order, the model's element type), and DIR/outputs.json lists
// the output names in that order. One thread, every graph optimization off: the model as written.
// --bench (bench/reference_speed.py) is the other side of a speed comparison instead: onnxruntime's
// default session (its graph optimizations, its threads), inputs not given are zeros of their static
// shape, --out optional, and one JSON line on stdout: {"load_s": session creation, "run_s": the run,
// "outputs": [names]}.
// Exit 0; 1 with "ort_run: error: ..." on stderr when the package, the model, an input or the run fails.
'use strict';

const fs = require('fs');
const path = require('path');

function fail(message) {
  process.stderr.write('ort_run: error: ' + message + '\n');
  process.exit(1);
}

// numpy descr -> [onnxruntime type, typed array class]; float16 is carried as its bits.
const TYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<f2': ['float16', Uint16Array],
  '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array], '<i2': ['int16', Int16Array],
  '|i1': ['int8', Int8Array], '<u8': ['uint64', BigUint64Array], '<u4': ['uint32', Uint32Array],
  '<u2': ['uint16', Uint16Array], '|u1': ['uint8', Uint8Array], '|b1': ['bool', Uint8Array],
};

function readNpy(file) {
  let b;
  try {
    b = fs.readFileSync(file);
  } catch (e) {
    fail('cannot read ' + file + ': ' + e.message);
  }
  if (b.length < 10 || b.toString('latin1', 0, 6) !== '\x93NUMPY') fail(file + ' is not a .npy file');
  const major = b[6];
  const headerLength = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = b.toString('latin1', start, start + headerLength);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const fortran = /'fortran_order':\s*(True|False)/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) fail(file + ': a .npy header without descr, fortran_order or shape');
  if (fortran[1] === 'True') fail(file + ': Fortran-order arrays are not read (save it in C order)');
  const type = TYPES[descr[1]];
  if (!type) fail(file + ': element type ' + descr[1] + ' is not one onnxruntime takes here');
  const dims = shape[1].split(',').map(s => s.trim()).filter(s => s.length).map(Number);
  const count = dims.reduce((a, d) => a * d, 1);
  const data = start + headerLength;
  const bytes = count * type[1].BYTES_PER_ELEMENT;
  if (b.length - data < bytes) fail(file + ': the data is shorter than its shape says');
  const copy = new Uint8Array(bytes);  // aligned for the typed array
  copy.set(b.subarray(data, data + bytes));
  return {type: type[0], data: new type[1](copy.buffer), dims};
}

function writeNpy(file, tensor) {
  const entry = Object.entries(TYPES).find(([, t]) => t[0] === tensor.type);
  if (!entry) fail('output type ' + tensor.type + ' cannot be written as .npy');
  const shape = tensor.dims.length === 1 ? '(' + tensor.dims[0] + ',)' : '(' + tensor.dims.join(', ') + ')';
  let header = "{'descr': '" + entry[0] + "', 'fortran_order': False, 'shape': " + shape + ', }';
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const data = tensor.data;
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), body]));
}

async function main() {
  const args = process.argv.slice(2);
  let pkg = '', model = '', out = '', bench = false;
  const inputs = [];
  for (let i = 0; i < args.length; ++i) {
    const a = args[i], v = args[i + 1];
    if (a === '--bench') bench = true;
    else if (a === '--ort' && v !== undefined) pkg = args[++i];
    else if (a === '--model' && v !== undefined) model = args[++i];
    else if (a === '--out' && v !== undefined) out = args[++i];
    else if (a === '--input' && v !== undefined) inputs.push(args[++i]);
    else fail('unknown argument ' + a + ' (usage: ort_run.js [--bench] --ort PKG --model M.onnx --out DIR [--input NAME=FILE]...)');
  }
  if (!pkg || !model || !(out || bench)) fail('--ort, --model and --out are required');
  if (fs.existsSync(path.join(pkg, 'node_modules', 'onnxruntime-node'))) pkg = path.join(pkg, 'node_modules', 'onnxruntime-node');
  let ort;
  try {
    ort = require(path.resolve(pkg));
  } catch (e) {
    fail('cannot load onnxruntime-node from ' + pkg + ' (' + e.message.split('\n')[0] +
         '); install it: npm install --ignore-scripts --prefix build/ort onnxruntime-node');
  }
  const feeds = {};
  for (const spec of inputs) {
    const eq = spec.lastIndexOf('=');
    if (eq <= 0) fail('--input takes NAME=FILE.npy, got ' + spec);
    const t = readNpy(spec.slice(eq + 1));
    feeds[spec.slice(0, eq)] = new ort.Tensor(t.type, t.data, t.dims);
  }
  const options = bench ? {executionProviders: ['cpu']}
                        : {executionProviders: ['cpu'], graphOptimizationLevel: 'disabled', intraOpNumThreads: 1,
                           interOpNumThreads: 1};
  let session;
  const t0 = process.hrtime.bigint();
  try {
    session = await ort.InferenceSession.create(model, options);
  } catch (e) {
    fail('onnxruntime cannot load ' + model + ': ' + e.message);
  }
  const t1 = process.hrtime.bigint();
  for (const name of Object.keys(feeds)) {
    if (!session.inputNames.includes(name)) fail(name + ' is not an input of ' + model + ' (' + session.inputNames.join(', ') + ')');
  }
  for (const name of session.inputNames) {
    if (feeds[name]) continue;
    if (!bench) fail('no --input for ' + name);
    // A benchmark run: zeros of the input's static shape (a symbolic dim as 1).
    const meta = (session.inputMetadata || []).find(m => m.name === name);
    if (!meta || !meta.shape) fail('input ' + name + ' has no --input and no static shape');
    const dims = meta.shape.map(d => (typeof d === 'number' ? d : 1));
    feeds[name] = new ort.Tensor('float32', new Float32Array(dims.reduce((a, d) => a * d, 1)), dims);
  }
  let results;
  const t2 = process.hrtime.bigint();
  try {
    results = await session.run(feeds);
  } catch (e) {
    fail('onnxruntime failed to run ' + model + ': ' + e.message);
  }
  const t3 = process.hrtime.bigint();
  if (out) {
    fs.mkdirSync(out, {recursive: true});
    session.outputNames.forEach((name, i) => writeNpy(path.join(out, i + '.npy'), results[name]));
    fs.writeFileSync(path.join(out, 'outputs.json'), JSON.stringify(session.outputNames) + '\n');
  }
  if (bench) {
    const sec = (a, b) => Number(b - a) / 1e9;
    process.stdout.write(JSON.stringify({load_s: sec(t0, t1), run_s: sec(t2, t3), outputs: session.outputNames}) + '\n');
  }
}

main().catch(e => fail(e && e.message ? e.message : String(e)));
