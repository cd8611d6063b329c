/* libFuzzer target: the decoder of Azure OpenAI streams. The reader is
 * the Chat Completions one; the seeds are Azure's own (prompt filter
 * chunks with empty choices, annotations without a delta, string error
 * codes). The checks are in llm_stream.h. Seeds:
 * tests/fuzz/corpus/llm_azure. */
#define CODEC	llm_azure_codec
#include "llm_stream.h"
