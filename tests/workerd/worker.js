// Counts the POSTed text (or ?text=) with context-keeper inside workerd.
import { countTokens, estimateTokens } from "context-keeper";

export default {
  async fetch(request) {
    const url = new URL(request.url);
    const text = request.method === "POST" ? await request.text() : url.searchParams.get("text") ?? "";
    try {
      const body = {
        o200k_base: countTokens(text),
        cl100k_base: countTokens(text, { encoding: "cl100k_base" }),
        gpt4: countTokens(text, { model: "gpt-4" }),
        estimate: estimateTokens(text),
      };
      if (url.searchParams.has("encoding")) body.custom = countTokens(text, { encoding: url.searchParams.get("encoding") });
      return Response.json(body);
    } catch (err) {
      return Response.json({ error: { name: err.name, message: err.message, isError: err instanceof Error } }, { status: 400 });
    }
  },
};
