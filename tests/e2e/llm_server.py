"""Starts llama.cpp's OpenAI-compatible server (`python -m llama_cpp.server`, same arguments) with
llama.cpp's extra CPU buffer types turned off.

Why: on a CPU with Intel AMX (amx_tile, amx_int8: Sapphire Rapids and later), a llama.cpp built
for the native CPU repacks the weights for AMX, and under this machine's kernel the AMX matrix
multiply segfaults on the first prompt of more than one token (`ggml_backend_amx_mul_mat`); the
server then dies on every chat completion. The repacking is only a speed-up: without it the same
model answers the same, on the plain AVX kernels. llama-cpp-python 0.3.36 has no option for it,
so the default model params are patched before the server creates its model.
"""

import llama_cpp.llama_cpp as bindings

_default_params = bindings.llama_model_default_params


def _params_without_extra_buffer_types():
    params = _default_params()
    params.use_extra_bufts = False
    return params


bindings.llama_model_default_params = _params_without_extra_buffer_types

if __name__ == "__main__":
    from llama_cpp.server.__main__ import main

    main()
