// The official openai npm client against a running zoo serve: models,
// completions, chat and embeddings, plain and streamed, and an error.
// serve's TestOpenAINodeClient starts the server, runs this script with
// ZOO_URL and ZOO_KEY set, and checks what it prints (one JSON object)
// against the library's answers.
import OpenAI from 'openai';

const client = new OpenAI({
  baseURL: process.env.ZOO_URL + '/v1',
  apiKey: process.env.ZOO_KEY || 'none',
  maxRetries: 0,
  timeout: 60_000,
});

const out = {};
out.models = (await client.models.list()).data.map((m) => m.id);

const c = await client.completions.create({ model: 'gpt', prompt: 'the cat', max_tokens: 7, temperature: 0 });
out.completion = { text: c.choices[0].text, finish: c.choices[0].finish_reason, usage: c.usage };

let text = '';
const stream = await client.completions.create({ model: 'gpt', prompt: 'the cat', max_tokens: 7, temperature: 0, stream: true });
for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
out.completionStream = text;

const messages = [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello' }];
const chat = await client.chat.completions.create({ model: 'gpt', messages, max_tokens: 7, temperature: 0 });
out.chat = { content: chat.choices[0].message.content, role: chat.choices[0].message.role, finish: chat.choices[0].finish_reason };

let said = '';
const chatStream = await client.chat.completions.create({ model: 'gpt', messages, max_tokens: 7, temperature: 0, stream: true });
for await (const chunk of chatStream) said += chunk.choices[0]?.delta?.content ?? '';
out.chatStream = said;

// The client asks for base64 by default and decodes it.
const e = await client.embeddings.create({ model: 'feat', input: ['the cat', 'a dog ran'] });
out.embeddings = e.data.map((d) => d.embedding);
const ef = await client.embeddings.create({ model: 'feat', input: 'the cat', encoding_format: 'float' });
out.embeddingFloat = ef.data[0].embedding;

try {
  await client.completions.create({ model: 'nope', prompt: 'a' });
} catch (err) {
  out.error = { status: err.status, message: err.message, type: err.type, param: err.param };
}
console.log(JSON.stringify(out));
