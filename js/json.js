// JSON with exact integers: `parseJson` reads an integer literal as a
// number when it is a safe integer (|n| <= 2^53 - 1) and as a BigInt
// otherwise, so u64 values up to 18446744073709551615 survive;
// `stringifyJson` writes BigInts as plain integer literals.

/**
 * Parses JSON text. Integers beyond Number.MAX_SAFE_INTEGER become BigInts;
 * a key given twice in one object is an error.
 * @param {string} text
 * @returns {unknown}
 */
export function parseJson(text) {
  let i = 0;
  const fail = (what) => {
    throw new SyntaxError(`JSON: ${what} at offset ${i}`);
  };
  const ws = () => {
    while (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r") i++;
  };
  const string = () => {
    let out = "";
    for (i++; ; ) {
      const c = text[i++];
      if (c === undefined) fail("unterminated string");
      if (c === '"') return out;
      if (c < " ") fail("control character in a string");
      if (c !== "\\") {
        out += c;
        continue;
      }
      const e = text[i++];
      const simple = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
      if (Object.hasOwn(simple, e)) out += simple[e];
      else if (e === "u" && /^[0-9a-fA-F]{4}$/.test(text.slice(i, i + 4))) {
        out += String.fromCharCode(parseInt(text.slice(i, i + 4), 16));
        i += 4;
      } else fail("bad escape");
    }
  };
  const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
  const value = () => {
    ws();
    const c = text[i];
    if (c === "{") {
      const obj = {};
      i++;
      ws();
      if (text[i] === "}") return i++, obj;
      for (;;) {
        ws();
        if (text[i] !== '"') fail("expected a key");
        const key = string();
        if (Object.hasOwn(obj, key)) fail(`duplicate key ${JSON.stringify(key)}`);
        ws();
        if (text[i++] !== ":") fail("expected ':'");
        // A `__proto__` key is an own property, not the prototype.
        Object.defineProperty(obj, key, { value: value(), enumerable: true, writable: true, configurable: true });
        ws();
        const sep = text[i++];
        if (sep === "}") return obj;
        if (sep !== ",") fail("expected ',' or '}'");
      }
    }
    if (c === "[") {
      const arr = [];
      i++;
      ws();
      if (text[i] === "]") return i++, arr;
      for (;;) {
        arr.push(value());
        ws();
        const sep = text[i++];
        if (sep === "]") return arr;
        if (sep !== ",") fail("expected ',' or ']'");
      }
    }
    if (c === '"') return string();
    for (const [word, v] of [["true", true], ["false", false], ["null", null]]) {
      if (text.startsWith(word, i)) return (i += word.length), v;
    }
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (!m) fail("unexpected character");
    i += m[0].length;
    if (m[1] === undefined && m[2] === undefined) {
      const n = Number(m[0]);
      return Number.isSafeInteger(n) ? n : BigInt(m[0]);
    }
    return Number(m[0]);
  };
  const v = value();
  ws();
  if (i !== text.length) fail("trailing characters");
  return v;
}

/**
 * Writes a value as JSON, BigInts as integer literals. Objects, arrays,
 * strings, finite numbers, booleans and null; an undefined property is left
 * out, as `JSON.stringify` does.
 * @param {unknown} value
 * @returns {string}
 */
export function stringifyJson(value) {
  if (typeof value === "bigint") return value.toString();
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? "null" : stringifyJson(v))).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const fields = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{${fields.map(([k, v]) => `${JSON.stringify(k)}:${stringifyJson(v)}`).join(",")}}`;
  }
  if (typeof value === "number" && !Number.isFinite(value)) throw new TypeError(`JSON: ${value} is not a JSON number`);
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError(`JSON: a ${typeof value} is not a JSON value`);
  return text;
}
