/* libFuzzer target: the decoder of OpenAI Chat Completions streams (the
 * reader Ollama, llama.cpp and vLLM streams go through too), behind the
 * real SSE parser. The checks are in llm_stream.h. Seeds:
 * tests/fuzz/corpus/llm_openai. */
#define CODEC	llm_openai_codec
#include "llm_stream.h"
