// placeholder so the tokenizer library exists before its first source lands; removed when it does.
