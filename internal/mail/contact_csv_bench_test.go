package mail

import (
	"bufio"
	"fmt"
	"io"
	"testing"
)

// BenchmarkContactCSV parses a generated file with two custom fields.
func BenchmarkContactCSV(b *testing.B) {
	fields := []CustomField{{ID: 1001, Name: "score", Type: FieldNumber}, {ID: 1002, Name: "joined", Type: FieldDatetime}}
	country := func(string) (int32, bool) { return 276, true }
	const rows = 100_000
	for i := 0; i < b.N; i++ {
		pr, pw := io.Pipe()
		go func() {
			bw := bufio.NewWriter(pw)
			bw.WriteString("email,first_name,last_name,country,score,joined\n")
			for j := 0; j < rows; j++ {
				fmt.Fprintf(bw, "user%d@example.com,First%d,Last%d,DE,%d,2026-01-%02dT10:30\n", j, j, j, j%1000, j%28+1)
			}
			bw.Flush()
			pw.Close()
		}()
		c, err := NewContactCSV(pr, fields, country)
		if err != nil {
			b.Fatal(err)
		}
		for {
			_, err := c.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
