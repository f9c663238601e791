// A tool-using agent in JavaScript (Node 18+, no packages): Chat Completions over fetch,
// at the URL in OPENAI_BASE_URL, with the question on stdin and the answer on stdout.
const WEATHER = { Paris: "18C, cloudy", Rome: "24C, sunny", Oslo: "7C, rain" };
const FUNCTIONS = {
  get_weather: ({ city }) => `${WEATHER[city] ?? "20C, clear"} in ${city}`,
  get_time: ({ city }) => `14:00 in ${city}`,
};
const TOOLS = Object.keys(FUNCTIONS).map((name) => ({
  type: "function",
  function: {
    name,
    parameters: {
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
    },
  },
}));

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8").trim();
}

async function complete(messages) {
  const response = await fetch(`${process.env.OPENAI_BASE_URL}/chat/completions`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${process.env.OPENAI_API_KEY}`,
    },
    body: JSON.stringify({ model: "gpt-4o-mini", messages, tools: TOOLS }),
  });
  const body = await response.json();
  if (!response.ok) throw new Error(`HTTP ${response.status}: ${body.error?.message}`);
  return body.choices[0].message;
}

async function main() {
  const messages = [{ role: "user", content: await readStdin() }];
  for (let round = 0; round < 10; round++) {
    const message = await complete(messages);
    messages.push(message);
    if (!message.tool_calls?.length) {
      process.stdout.write(message.content ?? "");
      return;
    }
    for (const call of message.tool_calls) {
      const fn = FUNCTIONS[call.function.name];
      const content = fn ? fn(JSON.parse(call.function.arguments)) : `error: no tool ${call.function.name}`;
      messages.push({ role: "tool", tool_call_id: call.id, content });
    }
  }
  throw new Error("no answer after 10 rounds");
}

main().catch((error) => {
  console.error(error.message);
  process.exit(1);
});
