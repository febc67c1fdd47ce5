// Run a biLM exported by `spacy-elmo convert MODEL OUT.onnx` in Node.js, with onnxruntime-node.
//
//   ONNXRUNTIME_NODE_INSTALL=skip npm install     (once, here: the CPU build, nothing from outside npm)
//   node embed.js MODEL.onnx "The cat sat ." "Hello world !"
//       prints each sentence's layers: (L + 1) x tokens x 2P, and its first values
//   node embed.js MODEL.onnx --ids ids.json --out layers.json
//       runs given char ids ({"shape": [B, T, W], "data": [...]}) and writes the layers as JSON
//
// Tokens are split on spaces here; give the same tokens spaCy's tokenizer gives for the same numbers.
// The char ids are those of every original ELMo file (UTF-8 bytes, shifted by one, 0 = padding), as
// spacy_elmo/token_ids.py makes them; a biLM with a learned vocabulary (ELMoForManyLangs) keeps its
// vocabulary in the model's metadata ("spacy_elmo.vocab"), which this small example does not read.
'use strict';

const fs = require('fs');
const ort = require('onnxruntime-node');

const BOS = 257, EOS = 258, BOW = 259, EOW = 260, PAD = 261;

function tokenIds(word, maxChars) {
  const ids = new Array(maxChars).fill(PAD);
  ids[0] = BOW;
  if (word === '<S>' || word === '</S>') {
    ids[1] = word === '<S>' ? BOS : EOS;
    ids[2] = EOW;
    return ids;
  }
  const bytes = Buffer.from(word, 'utf8').subarray(0, maxChars - 2); // bytes, not characters, as the original
  bytes.forEach((b, i) => { ids[1 + i] = b + 1; });
  ids[1 + bytes.length] = EOW;
  return ids;
}

function batchIds(sentences, maxChars) {
  const steps = Math.max(...sentences.map((s) => s.length)) + 2;
  const data = new BigInt64Array(sentences.length * steps * maxChars); // 0: a padded position
  sentences.forEach((sentence, row) => {
    ['<S>', ...sentence, '</S>'].forEach((word, t) => {
      tokenIds(word, maxChars).forEach((id, c) => { data[(row * steps + t) * maxChars + c] = BigInt(id); });
    });
  });
  return new ort.Tensor('int64', data, [sentences.length, steps, maxChars]);
}

// W, the characters per token, is fixed in an export: the char_ids input's last axis (onnxruntime-node >= 1.22
// tells an input's shape; an older one gets 50, every original ELMo file's W, and ONNX Runtime refuses another).
function charsPerToken(session) {
  const meta = (session.inputMetadata || []).find((m) => m.name === 'char_ids');
  const W = meta && meta.shape ? Number(meta.shape[2]) : NaN;
  return Number.isInteger(W) && W > 2 ? W : 50;
}

async function main() {
  const args = process.argv.slice(2);
  if (args.length < 2) {
    console.error('usage: node embed.js MODEL.onnx SENTENCE... | node embed.js MODEL.onnx --ids ids.json --out layers.json');
    process.exit(2);
  }
  const session = await ort.InferenceSession.create(args[0]);
  if (!session.outputNames.includes('layers') || !session.inputNames.includes('char_ids')) {
    throw new Error(`${args[0]} is not a biLM exported by spacy-elmo (inputs ${session.inputNames}, outputs ${session.outputNames}): export one with spacy-elmo convert MODEL OUT.onnx`);
  }
  if (args[1] === '--ids') {
    if (args.length !== 5 || args[3] !== '--out') {
      throw new Error('usage: node embed.js MODEL.onnx --ids ids.json --out layers.json');
    }
    const given = JSON.parse(fs.readFileSync(args[2], 'utf8'));
    const ids = new ort.Tensor('int64', BigInt64Array.from(given.data.map(BigInt)), given.shape);
    const { layers } = await session.run({ char_ids: ids });
    fs.writeFileSync(args[4], JSON.stringify({ shape: layers.dims, data: Array.from(layers.data) }));
    return;
  }
  const sentences = args.slice(1).map((s) => s.split(' ').filter((w) => w.length > 0));
  const maxChars = charsPerToken(session);
  const { layers } = await session.run({ char_ids: batchIds(sentences, maxChars) });
  const [L1, B, T, D] = layers.dims;
  sentences.forEach((sentence, row) => {
    if (sentence.length === 0) {
      console.log('(an empty sentence): no tokens, no layers');
      return;
    }
    const first = layers.data[(0 * B + row) * T * D + 1 * D]; // layer 0 of the sentence's first token
    const top = layers.data[((L1 - 1) * B + row) * T * D + 1 * D];
    console.log(`${sentence.join(' ')}: ${L1} layers x ${sentence.length} tokens x ${D}; first token, layer 0 starts ${first.toFixed(4)}, top layer ${top.toFixed(4)}`);
  });
}

main().catch((err) => { console.error(err.message || err); process.exit(1); });
