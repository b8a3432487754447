// ChatTemplate from tokenizer_config.json: the fixture families render as
// their models expect, BOS is reported so that it is not added twice, a
// config without a template is refused (or rendered plain on request), and
// bad configs fail with one clear message each.
#include "infer/chat/chat_template.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "infer/chat/template_renderer.h"

namespace parallm {
namespace {

std::string fixture(const std::string& name) {
  return std::string(PARALLM_SOURCE_DIR) + "/tests/infer/chat/fixtures/" + name + ".json";
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

const std::vector<ChatMessage> kChat = {
    {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello"}, {"user", "Bye"}};

TEST(ChatTemplate, Qwen2AddsItsDefaultSystemMessage) {
  const ChatTemplate t = ChatTemplate::from_config_file(fixture("qwen2_instruct"));
  const ChatPrompt p = t.render({{"user", "Hi"}}, true);
  EXPECT_EQ(p.text,
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_FALSE(p.starts_with_bos);  // Qwen2 has no BOS token
}

TEST(ChatTemplate, Llama3StartsWithBos) {
  const ChatTemplate t = ChatTemplate::from_config_file(fixture("llama3_instruct"));
  const ChatPrompt p = t.render({{"user", "  Hi  "}}, true);
  EXPECT_EQ(p.text,
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_TRUE(p.starts_with_bos);  // so the tokenizer must not add another
}

TEST(ChatTemplate, Llama2FoldsTheSystemMessageAndRefusesBadAlternation) {
  // The fixture stores its special tokens as AddedToken objects.
  const ChatTemplate t = ChatTemplate::from_config_file(fixture("llama2_chat"));
  EXPECT_EQ(t.render(kChat, false).text,
            "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello </s><s>[INST] Bye [/INST]");
  try {
    t.render({{"user", "a"}, {"user", "b"}}, false);
    FAIL() << "expected raise_exception";
  } catch (const chat::TemplateRaised& e) {
    EXPECT_EQ(e.message(), "Conversation roles must alternate user/assistant/user/assistant/...");
  }
}

TEST(ChatTemplate, MistralRefusesASystemRole) {
  const ChatTemplate t = ChatTemplate::from_config_file(fixture("mistral_instruct_v01"));
  EXPECT_EQ(t.render({{"user", "Hi"}, {"assistant", "Hello"}, {"user", "Bye"}}, false).text,
            "<s>[INST] Hi [/INST]Hello</s> [INST] Bye [/INST]");
  EXPECT_THROW(t.render(kChat, false), chat::TemplateRaised);
}

TEST(ChatTemplate, PlainFormatForModelsWithoutTemplate) {
  EXPECT_EQ(
      error_of([] { ChatTemplate::from_config_file(fixture("gpt2")); }),
      "chat template: " + fixture("gpt2") +
          " has no 'chat_template' (a base model such as GPT-2?); ChatTemplate::plain() joins "
          "the contents with newlines instead");
  const ChatTemplate t = ChatTemplate::from_config_file_or_plain(fixture("gpt2"));
  const ChatPrompt p = t.render(kChat, true);
  EXPECT_EQ(p.text, "Be brief.\nHi\nHello\nBye");
  EXPECT_FALSE(p.starts_with_bos);
}

TEST(ChatTemplate, BadConfigs) {
  EXPECT_EQ(error_of([] {
              ChatTemplate::from_config_text("{\"chat_template\": ", "cfg.json");
            }).rfind("chat template: cfg.json is not valid JSON: ", 0),
            0u);
  EXPECT_EQ(error_of([] { ChatTemplate::from_config_text("{\"chat_template\": 3}", "cfg.json"); }),
            "chat template: cfg.json: chat_template must be a string or a list, got number");
  EXPECT_EQ(error_of([] {
              ChatTemplate::from_config_text(
                  R"({"chat_template": [{"name": "tool_use", "template": "x"}]})", "cfg.json");
            }),
            "chat template: cfg.json: no template named 'default' among [\"tool_use\"]");
  EXPECT_EQ(error_of([] {
              ChatTemplate::from_config_text(R"({"chat_template": "{{ x | nope }}"})", "cfg.json");
            }),
            "chat template: unsupported filter 'nope' at line 1");
  EXPECT_EQ(error_of([] { ChatTemplate::from_config_text(R"({"bos_token": 5})", "cfg.json"); }),
            "chat template: cfg.json: 'bos_token' is neither a string nor a token object: 5");
  EXPECT_EQ(error_of([] { ChatTemplate::from_config_file("/nonexistent/tokenizer_config.json"); }),
            "chat template: cannot read tokenizer config '/nonexistent/tokenizer_config.json'");
  const ChatTemplate t = ChatTemplate::plain();
  EXPECT_EQ(error_of([&] { t.render({}, true); }),
            "chat template: the conversation is empty (no messages to render)");
}

TEST(ChatTemplate, NamedTemplateListPicksDefault) {
  const ChatTemplate t = ChatTemplate::from_config_text(
      R"({"bos_token": "<s>", "chat_template": [{"name": "tool_use", "template": "T"},
          {"name": "default", "template": "{{ bos_token }}{{ messages[0].content }}"}]})",
      "cfg.json");
  const ChatPrompt p = t.render({{"user", "x"}}, false);
  EXPECT_EQ(p.text, "<s>x");
  EXPECT_TRUE(p.starts_with_bos);
}

}  // namespace
}  // namespace parallm
