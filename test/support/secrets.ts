// Where a secret could hide in output: as it is, JSON-escaped, or base64-encoded at any byte alignment
// (a probe frame, `base64` of a file that holds it). Tests grep every output for all of these.
export function secretHits(text: string, secrets: string[]): string[] {
  const hits: string[] = [];
  for (const secret of secrets) {
    for (const form of searchForms(secret)) if (text.includes(form)) hits.push(`${secret.slice(0, 6)}… as ${JSON.stringify(form.slice(0, 24))}…`);
  }
  return hits;
}

function searchForms(secret: string): string[] {
  const forms = [secret, JSON.stringify(secret).slice(1, -1)];
  for (let a = 0; a < 3; a++) {
    // Written independently of the engine's redactor on purpose: the test must not trust the code it checks.
    const enc = Buffer.concat([Buffer.alloc(a), Buffer.from(secret)]).toString('base64');
    const skip = [0, 2, 3][a];
    const keep = Math.floor(((a + Buffer.byteLength(secret)) * 4) / 3) - skip - 1;
    if (keep >= 12) forms.push(enc.slice(skip, skip + keep));
  }
  return forms;
}
