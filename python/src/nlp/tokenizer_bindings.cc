// Tokenizer, StreamDecoder and ChatTemplate for spore.nlp.AutoTokenizer (NOTE [Python NLP]): thin
// wrappers; the Hugging Face behaviour (padding, return_tensors, ...) is spore/nlp/tokenizer.py's.
#include <pybind11/stl.h>

#include "nlp/nlp_bindings.h"
#include "spore/nlp/chat_template.h"
#include "spore/nlp/tokenizer.h"

namespace py = pybind11;

namespace spore::py_bind {

void bind_nlp_text(py::module_& nlp) {
  py::class_<nlp::Tokenizer>(nlp, "Tokenizer", py::module_local())
      .def_static("from_file", [](const std::string& path) { return nlp::Tokenizer::from_file(path); })
      .def("encode",
           [](const nlp::Tokenizer& t, const std::string& text, bool add_special) {
             py::gil_scoped_release nogil;
             return t.encode(text, add_special);
           },
           py::arg("text"), py::arg("add_special_tokens") = false)
      .def("decode",
           [](const nlp::Tokenizer& t, const std::vector<int32_t>& ids, bool skip) {
             const std::string s = t.decode(ids, skip);
             // The decoder may end inside a character (a byte-fallback piece cut short): Python
             // strings hold code points, so such bytes come back as U+FFFD, as tokenizers does.
             return py::reinterpret_steal<py::str>(PyUnicode_DecodeUTF8(s.data(), (Py_ssize_t)s.size(), "replace"));
           },
           py::arg("ids"), py::arg("skip_special_tokens") = false)
      .def_property_readonly("vocab_size", &nlp::Tokenizer::vocab_size)
      .def("token_to_id", [](const nlp::Tokenizer& t, const std::string& s) { return t.token_to_id(s); })
      .def("id_to_token", [](const nlp::Tokenizer& t, int32_t id) { return t.id_to_token(id); })
      .def("is_special", &nlp::Tokenizer::is_special)
      .def_property_readonly("bos_id", &nlp::Tokenizer::bos_id)
      .def_property_readonly("eos_id", &nlp::Tokenizer::eos_id)
      .def_property_readonly("pad_id", &nlp::Tokenizer::pad_id);

  py::class_<nlp::StreamDecoder>(nlp, "StreamDecoder", py::module_local())
      .def(py::init<const nlp::Tokenizer&, bool>(), py::arg("tokenizer"), py::arg("skip_special_tokens") = false)
      .def("push", &nlp::StreamDecoder::push)
      .def("finish", &nlp::StreamDecoder::finish);

  py::class_<nlp::ChatTemplate>(nlp, "ChatTemplate", py::module_local())
      .def_static("load", [](const std::string& path) { return nlp::ChatTemplate::load(path); })
      .def_static("from_text", [](const std::string& text, std::map<std::string, std::string> special) {
        return nlp::ChatTemplate::from_text(text, std::move(special));
      })
      .def("render",
           [](const nlp::ChatTemplate& t, const std::string& messages_json, bool add_generation_prompt,
              const std::string& kwargs_json) { return t.render(messages_json, add_generation_prompt, kwargs_json); },
           py::arg("messages_json"), py::arg("add_generation_prompt") = false, py::arg("kwargs_json") = "{}")
      .def("special_tokens", &nlp::ChatTemplate::special_tokens);
}

}  // namespace spore::py_bind
