/* libFuzzer target: the decoder of Anthropic Messages streams (named
 * events, content blocks by index), behind the real SSE parser. The
 * checks are in llm_stream.h. Seeds: tests/fuzz/corpus/llm_anthropic. */
#define CODEC	llm_anthropic_codec
#include "llm_stream.h"
