/* libFuzzer target: the decoder of OpenAI Responses API streams (typed
 * events, reasoning items with encrypted_content), behind the real SSE
 * parser. The checks are in llm_stream.h. Seeds:
 * tests/fuzz/corpus/llm_responses. */
#define CODEC	llm_responses_codec
#include "llm_stream.h"
