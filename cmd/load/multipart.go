package main

import (
	"bytes"
	"fmt"
	"mime/multipart"
)

// multipartWriter writes the CSV upload's form (contact_type_id and the
// file) into body and answers its content type.
func multipartWriter(body *bytes.Buffer, typeID int64, csv []byte) string {
	w := multipart.NewWriter(body)
	w.WriteField("contact_type_id", fmt.Sprint(typeID))
	f, _ := w.CreateFormFile("file", "load.csv")
	f.Write(csv)
	w.Close()
	return w.FormDataContentType()
}
