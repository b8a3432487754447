# Chat templates against transformers (label reference): chat_template_dump
# renders every fixture template (tests/infer/chat/fixtures, the published
# tokenizer_config.json templates) over conversations.json, and
# compare_chat_templates.py holds each rendering to transformers'
# apply_chat_template(tokenize=False), byte for byte (docs/chat_templates.md).
add_executable(chat_template_dump ${CMAKE_CURRENT_LIST_DIR}/chat_template_dump.cpp)
target_link_libraries(chat_template_dump PRIVATE parallm_core)
add_test(NAME reference.chat_templates
         COMMAND sh -c "$<TARGET_FILE:chat_template_dump> ${CMAKE_CURRENT_LIST_DIR}/fixtures ${CMAKE_CURRENT_LIST_DIR}/conversations.json chat_templates.json && /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/compare_chat_templates.py ${CMAKE_CURRENT_LIST_DIR}/fixtures chat_templates.json"
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.chat_templates PROPERTIES LABELS reference TIMEOUT 300)
# The comparison must catch a planted trailing space and a changed raise message.
add_test(NAME reference.chat_templates_self_test
         COMMAND sh -c "$<TARGET_FILE:chat_template_dump> ${CMAKE_CURRENT_LIST_DIR}/fixtures ${CMAKE_CURRENT_LIST_DIR}/conversations.json chat_templates_self_test.json && /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/compare_chat_templates.py --self-test ${CMAKE_CURRENT_LIST_DIR}/fixtures chat_templates_self_test.json"
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.chat_templates_self_test PROPERTIES LABELS reference TIMEOUT 300)
