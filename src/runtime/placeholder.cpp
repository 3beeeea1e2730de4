// placeholder so the runtime library exists before its first source lands; removed when it does.
