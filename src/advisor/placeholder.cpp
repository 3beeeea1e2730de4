// placeholder so the advisor library exists before its first source lands; removed when it does.
