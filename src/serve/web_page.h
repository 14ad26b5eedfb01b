// The chat page served at / (plain HTML, CSS and JavaScript, no external asset).
#pragma once

namespace spore::serve {
const char* chat_page_html();
}
