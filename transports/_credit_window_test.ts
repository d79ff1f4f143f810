import assert from "node:assert/strict";
import { ReceiveCredit, SendCredit } from "./_credit_window.ts";

Deno.test("credit window: a writer waits for credit, wakes on a grant, fails with the error given", async () => {
  const credit = new SendCredit(100);
  credit.spend(100);
  assert.equal(credit.available, 0);
  let woke = false;
  const waiting = credit.wait().then(() => woke = true);
  await Promise.resolve();
  assert.equal(woke, false);
  credit.grant(90); // an old, smaller total changes nothing
  await Promise.resolve();
  assert.equal(woke, false);
  credit.grant(150);
  await waiting;
  assert.equal(credit.available, 50);
  credit.spend(50);
  const failing = credit.wait();
  const error = new Error("gone");
  credit.fail(error);
  await assert.rejects(failing, (e) => e === error);
});

Deno.test("credit window: the receiver grants once a quarter of the window was read, and catches overruns", () => {
  const credit = new ReceiveCredit(1000);
  assert.equal(credit.receive(1000), undefined);
  assert.equal(credit.receive(1), "1001 > 1000 bytes");
  assert.equal(credit.consume(249), undefined);
  assert.equal(credit.consume(1), 1250);
  assert.equal(credit.receive(250), undefined);
  assert.equal(credit.receive(1), "1251 > 1250 bytes");
  assert.equal(credit.consume(100), undefined);
});

Deno.test("credit window: grants as the bytes read since the last grant add up to the same totals", async () => {
  const receive = new ReceiveCredit(1000);
  const send = new SendCredit(1000);
  send.spend(1000);
  const waiting = send.wait();
  const before = receive.granted;
  assert.equal(receive.consume(300), 1300);
  send.grantMore(receive.granted - before);
  await waiting;
  assert.equal(send.available, 300);
  assert.equal(receive.consume(-50), undefined); // a rest given back unread
  assert.equal(receive.consume(299), undefined);
  assert.equal(receive.consume(1), 1550);
});
